declare module 'kubewasm:reconciler/log@0.2.0' {
  /**
   * Log `message` with structured key/value `fields`.
   */
  export function log(level: Level, message: string, fields: Array<[string, string]>): void;
  /**
   * # Variants
   * 
   * ## `"trace"`
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}
