// What every screen module gets from app.ts: the API, the signed-in session and the shared helpers
// (so the small screen modules stay free of the shell's routing and sign-in state).
import type { Session } from "./access";
import type { Api } from "./api";

export interface Kit {
  api: Api;
  session: Session;
  /** Runs an API call for a button (disabled meanwhile); sign-in problems go back to the sign-in page. */
  guarded<T>(control: HTMLButtonElement | null, work: () => Promise<T>, onError: (err: unknown) => void): Promise<T | undefined>;
  errorBox(err: unknown): HTMLElement;
  button(label: string, onclick: (ev: Event) => void, attrs?: Record<string, string | boolean>): HTMLButtonElement;
  announce(message: string): void;
  /** Draws a screen in the console's frame: header, title, content. */
  shell(title: string, ...content: (Node | null)[]): void;
  /** Bumps on every navigation: an answer for an older screen compares and stops. */
  generation(): number;
}
