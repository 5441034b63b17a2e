/**
 * An AbortController made on first use. The engine gives every acquire request a signal, but an
 * uncontended grant never reads or aborts it: making the controller (a native EventTarget) was
 * the largest cost left in the cycle. Reading `signal` or calling `abort` makes it; an abort
 * before anyone read the signal is kept, so a later reader sees it aborted with that reason.
 */
export class LazyAbortController {
  private controller?: AbortController;

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  get aborted(): boolean {
    return this.controller?.signal.aborted ?? false;
  }

  abort(reason?: unknown): void {
    (this.controller ??= new AbortController()).abort(reason);
  }
}
