// anywidget entry point.
import type { RenderProps } from "@anywidget/types";
import { LensApp } from "./app";
import type { WidgetTraits } from "./model/protocol";

export default {
  render({ model, el }: RenderProps<WidgetTraits>): () => void {
    performance.mark("lens:render-start");
    const app = new LensApp(model, el);
    return () => app.dispose();
  },
};
