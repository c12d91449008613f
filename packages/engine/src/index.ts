export { CorruptionError, EngineError, type ErrorCode, ErrorCodes } from './errors.js';
