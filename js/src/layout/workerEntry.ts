// Web Worker entry: runs dagre layout jobs off the main thread.
import { type LayoutJob, runJobs } from "./boxLayout";

interface Req {
  seq: number;
  jobs: LayoutJob[];
}

const scope = self as unknown as DedicatedWorkerGlobalScope;
scope.onmessage = (ev: MessageEvent<Req>) => {
  const { seq, jobs } = ev.data;
  try {
    scope.postMessage({ seq, results: runJobs(jobs) });
  } catch (e) {
    scope.postMessage({ seq, error: String(e) });
  }
};
