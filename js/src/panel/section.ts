// A section of the inspector that shows something fetched from the kernel: its title row,
// a status line (loading, kernel busy, error with Retry, not saved with Re-run, a re-run
// waiting for the running cell), controls, and whatever it plots. Only the latest request's
// answer is shown.
import { type OnWaiting, RequestError } from "../kernel/messages";
import { h } from "../render/dom";
import { ensurePlots } from "./plots";

export type SectionState = "idle" | "loading" | "slow" | "waiting" | "done" | "error" | "unsaved" | "unavailable";

export interface SectionHooks<T> {
  /** Asks the kernel; `onSlow` fires when it has not answered within a second. */
  fetch(onSlow: () => void): Promise<T>;
  /** Draws an answer (Plotly is loaded by then). */
  show(value: T): void;
  /** Drops what was drawn. */
  clear(): void;
  /** Re-runs the model so that what the section needs is saved; `onWaiting`: the kernel
   * runs it only when the running cell has finished. */
  rerun(onWaiting: OnWaiting): Promise<void>;
  /** Why no re-run can be offered (no model, no kernel), or null. */
  noRerun(): string | null;
}

export class Section<T> {
  readonly el: HTMLElement;
  readonly head: HTMLElement;
  readonly controls = h("div", "lens-act-controls");
  state: SectionState = "idle";
  private statusEl = h("div", "lens-act-status");
  private titleEl = h("span", "");
  private token = 0;

  constructor(
    title: string,
    private testid: string,
    private hooks: SectionHooks<T>,
  ) {
    this.el = h("div", "lens-act");
    this.el.dataset.testid = testid;
    this.head = h("div", "lens-section-title");
    this.titleEl.textContent = title;
    this.titleEl.dataset.testid = `${testid}-title`;
    this.head.append(this.titleEl);
    this.statusEl.dataset.testid = `${testid}-status`;
    this.el.append(this.head, this.statusEl, this.controls);
  }

  private setState(s: SectionState, text: string): void {
    this.state = s;
    this.statusEl.textContent = text;
    this.statusEl.className = `lens-act-status lens-act-${s}`;
    this.el.dataset.state = s;
  }

  setTitle(title: string): void {
    this.titleEl.textContent = title;
  }

  /** Nothing to fetch: says why (e.g. "no gradient reached this op"). */
  unavailable(text: string): void {
    ++this.token;
    this.controls.replaceChildren();
    this.hooks.clear();
    this.setState("unavailable", text);
  }

  /** Fetches and shows; `saved` false offers a re-run instead (`what` is not saved). */
  load(saved: boolean, what: string): void {
    const token = ++this.token;
    this.controls.replaceChildren();
    if (!saved) {
      this.hooks.clear();
      this.offerRerun(token, `${what} not saved`);
      return;
    }
    this.setState("loading", `loading ${what}…`);
    // Plotly loads lazily: a click before it is ready waits here, in the loading state.
    Promise.all([
      this.hooks.fetch(() => {
        if (token === this.token && this.state === "loading") this.setState("slow", "waiting for kernel (busy?)…");
      }),
      ensurePlots(),
    ]).then(
      ([value]) => {
        if (token !== this.token) return;
        this.setState("done", "");
        this.hooks.show(value);
      },
      (e: Error) => {
        if (token !== this.token) return;
        this.hooks.clear();
        // no kernel to ask (or not in this saved page): say so, a retry would not help
        if (e instanceof RequestError && e.unavailable) return this.setState("unavailable", e.message);
        // the kernel knows no gradient reached it (in the pass asked for): a fact, not a failure
        if (/^no gradient reached/.test(e.message)) return this.setState("unavailable", e.message);
        // the kernel says when inputs were not saved: offer the re-run that saves them
        if (/not saved|re-run/.test(e.message) && !(e instanceof RequestError && e.timedOut)) {
          return this.offerRerun(token, e.message);
        }
        const msg =
          e instanceof RequestError && e.timedOut
            ? `${e.message} — is the kernel busy or gone?`
            : `error: ${e.message}`;
        this.setState("error", msg);
        const retry = h("button", "lens-btn", "Retry");
        retry.onclick = () => this.load(true, what);
        this.controls.append(retry);
      },
    );
  }

  private offerRerun(token: number, text: string): void {
    const why = this.hooks.noRerun();
    // a button that can only fail is not offered: say what is missing and why instead
    if (why) return this.setState("unsaved", `${text.replace(/; re-run to save it$/, "")} in this trace (${why})`);
    this.setState("unsaved", text);
    const btn = h("button", "lens-btn lens-btn-primary", "Re-run to capture");
    btn.dataset.testid = this.testid === "activation" ? "rerun" : `${this.testid}-rerun`;
    btn.onclick = () => {
      btn.disabled = true;
      this.setState("loading", "re-running the model to capture it…");
      const waiting: OnWaiting = (reason) => {
        if (token === this.token) this.setState("waiting", `${reason}: the re-run starts when it finishes…`);
      };
      this.hooks.rerun(waiting).then(
        () => {
          if (token === this.token) this.setState("loading", "re-run done, waiting for the new graph…");
        },
        (e: Error) => {
          if (token === this.token) {
            this.setState("error", `re-run failed: ${e.message}`);
            btn.disabled = false;
          }
        },
      );
    };
    this.controls.append(btn);
  }

  /** Forgets any request in flight (the node changed or the panel closed). */
  cancel(): void {
    this.token++;
  }
}
