// The metric overlay and the monitor view, built with what they ask of the rest of the widget:
// the overlay colours the renderer's frame and holds the gradient button beside its legend; the
// monitor's step colours go through the overlay. Kept out of app.ts (the composition root).
import { OverlayControl } from "../controls/overlayControl";
import type { WidgetModel } from "../kernel/widgetModel";
import { MonitorView } from "../monitor/monitorView";
import type { AppHost } from "./appHost";

/** The overlay control, drawn by the renderer, with the gradient button before its legend. */
export function createOverlay(app: AppHost): OverlayControl {
  const overlay = new OverlayControl({
    requests: () => app.requests,
    frame: () => app.renderer.frame,
    repaint: () => app.renderer.request(),
    selectUnrolled: (id) => app.selectUnrolled(id),
    sideChanged: () => app.current && app.selected && app.inspector.show(app.current, app.selected),
    metricPicked: () => app.monitor.metricPicked(),
  });
  app.renderer.overlay = overlay;
  overlay.picker.el.insertBefore(app.grads.button, overlay.picker.legend.el);
  return overlay;
}

/** The monitor view (`LensWidget.from_monitor`), following the op selected in the graph. */
export function createMonitor(app: AppHost, model: WidgetModel): MonitorView {
  const monitor = new MonitorView(model, {
    requests: () => app.requests,
    showValues: (ext) => app.overlay.showExternal(ext),
    selectUnrolled: (id) => app.selectUnrolled(id),
    theme: () => app.theme,
  });
  app.store.subscribe(["selected"], (s) => monitor.select(app.mapId(s.selected, s.view, "unrolled")));
  return monitor;
}
