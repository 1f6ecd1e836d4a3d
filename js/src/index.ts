// anywidget entry point.
import type { AnyModel } from "./kernel/anywidget";
import { LensApp } from "./app";

export default {
  render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
    performance.mark("lens:render-start");
    const app = new LensApp(model, el);
    return () => app.dispose();
  },
};
