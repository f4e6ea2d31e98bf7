// Token counting (js-tiktoken rank data) and the model catalog: windows, encodings, prices.
export type { Accuracy, Encoding, ModelPrices, ModelSpec, ResolvedModel } from './types';
export { DEFAULT_MODEL_SPEC, MODEL_CATALOG, resolveModel } from './model-catalog';
export { countTextSync } from './encoders';
export { TokenCountPool } from './token-count-pool';
export { combineCounts, recalibratedMultiplier } from './combine';
export { estimateImageTokens, openaiImageBilling, readImageSize } from './images';
export type { ImageDetail } from './images';
