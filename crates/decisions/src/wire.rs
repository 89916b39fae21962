//! The decisions part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.
