//! TODO elicitation
