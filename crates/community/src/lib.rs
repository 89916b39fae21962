//! The community assistant of WhatsApp and Discord groups: which knowledge-base entries suit a
//! space, member digests, tickets, and the personal data their summaries must not carry.
