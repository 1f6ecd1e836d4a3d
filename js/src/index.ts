// anywidget entry point; also the standalone HTML page's (renderPage).
import type { RenderProps } from "@anywidget/types";
import { LensApp } from "./app";
import type { WidgetTraits } from "./graph/protocol";

export { renderPage } from "./page";

export default {
  render({ model, el }: RenderProps<WidgetTraits>): () => void {
    performance.mark("lens:render-start");
    const app = new LensApp(model, el);
    return () => app.dispose();
  },
};
