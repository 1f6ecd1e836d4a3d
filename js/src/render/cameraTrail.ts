// Where the camera was before each module was opened, so closing the module returns there
// (the camera follows the person: render/camera.ts's revealCamera brings what opened into view).
import type { Camera } from "./camera";

export class CameraTrail {
  // in the order they were opened
  private before = new Map<string, Camera>();

  /** Module `key` is being opened with the camera at `cam`. */
  opened(key: string, cam: Camera): void {
    this.before.delete(key);
    this.before.set(key, { ...cam });
  }

  /** Module `key` is being closed: the camera from before it opened, if known. What was opened
   * after it is forgotten too (inside it, or seen from the view it leaves). */
  closed(key: string): Camera | null {
    const cam = this.before.get(key);
    if (!cam) return null;
    let after = false;
    for (const k of [...this.before.keys()]) {
      if (k === key) after = true;
      if (after) this.before.delete(k);
    }
    return cam;
  }

  /** A new graph, a view switch, expand or collapse all: nothing to return to. */
  clear(): void {
    this.before.clear();
  }
}
