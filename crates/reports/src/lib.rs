//! What a person reads about the fleet: metrics series and reports.
