// The inspector's "activation | gradient" switch, for logs with gradients: which value of the
// selected op is plotted, and with several backward passes which one (or their sum).
import type { ValueKind } from "../graph/protocol";
import { h } from "../render/dom";

export class ValueSwitch {
  readonly el = h("span", "lens-value-switch");
  value: ValueKind = "activation";
  backwardPass: number | undefined = undefined; // undefined: summed over the passes
  private buttons: Record<ValueKind, HTMLButtonElement>;
  private passPick = document.createElement("select");

  constructor(private onChange: () => void) {
    const seg = h("span", "lens-seg");
    const button = (value: ValueKind, text: string, title: string): HTMLButtonElement => {
      const b = h("button", "lens-btn", text);
      b.dataset.testid = `value-${value}`;
      b.title = title;
      b.onclick = () => this.set(value);
      seg.append(b);
      return b;
    };
    this.buttons = {
      activation: button("activation", "activation", "Plot the op's output"),
      grad: button("grad", "gradient", "Plot the gradient of the loss that flowed into the op's output"),
    };
    this.passPick.className = "lens-select";
    this.passPick.dataset.testid = "backward-pass-picker";
    this.passPick.title = "Which backward pass's gradient";
    this.passPick.onchange = () => {
      this.backwardPass = this.passPick.value ? Number(this.passPick.value) : undefined;
      this.onChange();
    };
    this.el.append(seg, this.passPick);
    this.show();
  }

  /** The backward passes that can be picked (1-based indices); a single one needs no picker. */
  setPasses(indices: number[]): void {
    const none = document.createElement("option");
    none.value = "";
    none.textContent = `sum of ${indices.length} passes`;
    const options = indices.map((i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = `backward pass ${i}`;
      return o;
    });
    this.passPick.replaceChildren(none, ...options);
    if (this.backwardPass !== undefined && !indices.includes(this.backwardPass)) this.backwardPass = undefined;
    this.passPick.value = this.backwardPass === undefined ? "" : String(this.backwardPass);
    this.passPick.dataset.n = String(indices.length);
    this.show();
  }

  /** `quiet`: the caller reloads the plot itself. */
  set(value: ValueKind, quiet = false): void {
    if (value === this.value) return;
    this.value = value;
    this.show();
    if (!quiet) this.onChange();
  }

  private show(): void {
    for (const v of ["activation", "grad"] as ValueKind[])
      this.buttons[v].setAttribute("aria-pressed", String(v === this.value));
    this.passPick.hidden = this.value !== "grad" || Number(this.passPick.dataset.n ?? 0) < 2;
  }
}
