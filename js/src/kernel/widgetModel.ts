// The anywidget model as this widget sees it, typed by @anywidget/types with the synced
// traits of model/protocol.ts: `model.get("view")` is a ViewName, no cast needed.
import type { AnyModel } from "@anywidget/types";
import type { WidgetTraits } from "../graph/protocol";

export type WidgetModel = AnyModel<WidgetTraits>;

/** The part of the model that carries custom messages (all the request client needs). */
export type MessageChannel = Pick<AnyModel, "on" | "off" | "send">;
