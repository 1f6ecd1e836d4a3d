// Runs layout jobs in a Blob-URL Web Worker (nothing is fetched from the network);
// falls back to the main thread where workers are not allowed.
import workerCode from "lens:layout-worker";
import { type GroupLayout, type LayoutJob, runJobs } from "./boxLayout";

interface Reply {
  seq: number;
  results?: GroupLayout[];
  error?: string;
}

export class LayoutClient {
  private worker: Worker | null = null;
  private url: string | null = null;
  private seq = 0;
  private pending = new Map<number, { resolve: (r: GroupLayout[]) => void; reject: (e: Error) => void }>();

  constructor() {
    try {
      this.url = URL.createObjectURL(new Blob([workerCode], { type: "text/javascript" }));
      this.worker = new Worker(this.url);
      this.worker.onmessage = (ev: MessageEvent<Reply>) => {
        const p = this.pending.get(ev.data.seq);
        if (!p) return;
        this.pending.delete(ev.data.seq);
        if (ev.data.results) p.resolve(ev.data.results);
        else p.reject(new Error(ev.data.error ?? "layout failed"));
      };
      this.worker.onerror = (ev) => {
        ev.preventDefault();
        for (const p of this.pending.values()) p.reject(new Error(ev.message || "layout worker error"));
        this.pending.clear();
      };
    } catch {
      this.worker = null;
    }
  }

  get usesWorker(): boolean {
    return this.worker !== null;
  }

  run(jobs: LayoutJob[]): Promise<GroupLayout[]> {
    if (jobs.length === 0) return Promise.resolve([]);
    if (!this.worker) {
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          try {
            resolve(runJobs(jobs));
          } catch (e) {
            reject(e as Error);
          }
        }, 0),
      );
    }
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.worker!.postMessage({ seq, jobs });
    });
  }

  dispose(): void {
    this.worker?.terminate();
    if (this.url) URL.revokeObjectURL(this.url);
    this.pending.clear();
  }
}
