// Tokenizers (js-tiktoken) and the model catalog live here (sessions issue).
export {};
