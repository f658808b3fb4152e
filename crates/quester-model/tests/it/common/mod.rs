pub mod bigram;
