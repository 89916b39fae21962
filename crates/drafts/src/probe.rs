//! Reading a video's duration, width and height from its container (MP4, MOV, WebM).
