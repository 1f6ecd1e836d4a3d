// What the parts split out of app.ts see of the controller: its components, its view state and
// the few steps they run (select, refresh, ...). app.ts's LensApp is the one implementation; the
// parts take it as this interface so each stays one idea without owning the controller's state.
import type { GradientControl, SelectAs } from "../controls/gradientControl";
import type { OverlayControl } from "../controls/overlayControl";
import type { Toolbar } from "../controls/toolbar";
import type { ViewHint } from "../controls/viewHint";
import type { GraphViews } from "../graph/graphViews";
import type { ViewName } from "../graph/protocol";
import type { GraphModel } from "../graph/tree";
import type { Visible } from "../graph/visibility";
import type { KernelLink } from "../kernel/kernelLink";
import type { RequestClient } from "../kernel/messages";
import type { Origin, TraitSync } from "../kernel/traitSync";
import type { Metrics } from "../layout/labels";
import type { SizeCache } from "../layout/scenePlan";
import type { MonitorView } from "../monitor/monitorView";
import type { Inspector } from "../panel/inspector";
import type { CameraTrail } from "../render/cameraTrail";
import type { GraphPane } from "../render/graphPane";
import type { Renderer } from "../render/renderer";
import type { Theme } from "../render/theme";
import type { ViewStore } from "../state/viewStore";

export interface SelectOptions {
  center?: boolean;
  origin?: Origin;
}

export interface AppHost {
  readonly root: HTMLElement;
  readonly store: ViewStore;
  readonly renderer: Renderer;
  readonly pane: GraphPane;
  readonly inspector: Inspector;
  readonly toolbar: Toolbar;
  readonly sync: TraitSync;
  readonly requests: RequestClient;
  readonly link: KernelLink;
  readonly overlay: OverlayControl;
  readonly grads: GradientControl;
  readonly monitor: MonitorView;
  readonly viewHint: ViewHint;
  readonly trail: CameraTrail;
  readonly metrics: Metrics;
  readonly theme: Theme;
  readonly views: GraphViews | null;
  // the visible set shown (null: lay out again) and the box sizes of the model shown
  vis: Visible | null;
  sizes: SizeCache | null;
  // the view state, read from the store
  readonly viewName: ViewName;
  readonly expanded: ReadonlySet<string>;
  readonly selected: string;
  readonly showParams: boolean;
  readonly current: GraphModel | null;
  getModel(view: ViewName): GraphModel | null;
  mapId(id: string, from: ViewName, to: ViewName): string;
  select(id: string, opts: SelectOptions): void;
  selectUnrolled(id: string, as?: SelectAs): void;
  setView(view: ViewName, origin: Origin): void;
  setExpanded(next: Set<string>, after?: () => void): void;
  refresh(after?: () => void): void;
}
