// The slice of anywidget's model API this widget uses (kept local: no runtime dependency).
export type Handler = (...args: any[]) => void;

export interface AnyModel {
  get(name: string): any;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: Handler): void;
  off(event: string, cb?: Handler): void;
  send(content: unknown, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
}
