// What every screen module gets from app.ts: the API, the signed-in session and the shared helpers
// (so the small screen modules stay free of the shell's routing and sign-in state).
import type { ProcedurePath } from "../../clients/typescript/src/paths";
import type { Session } from "./access";
import type { Api, Campaign, DispatchPreview, Path } from "./api";

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
  /** Whether the session as last read (a refusal reads it again) may call `path`. */
  can(path: Path | ProcedurePath): boolean;
  /** In place of a control the role may not use: what it needs and what the caller holds. */
  roleNote(what: string, path: Path): HTMLElement;
}

/** What the sections of one campaign's page share (campaign_page.ts draws them). */
export interface CampaignPage {
  kit: Kit;
  id: string;
  /** The campaign as last read or saved: a section that changes it puts the new one here. */
  current: Campaign;
  /** The send last reviewed, for each dispatch's planned count; null before a review. */
  planned: DispatchPreview | null;
  /** Whether this page is still the screen drawn (no navigation since): a late answer checks first. */
  onScreen(): boolean;
  /** Redraws the status badge and the lifecycle buttons from `current`. */
  lifecycleChanged(): void;
  /** Reads the dispatches and the stats again, and keeps polling while anything is sending. */
  poll(): Promise<void>;
  refreshStats(): Promise<void>;
}
