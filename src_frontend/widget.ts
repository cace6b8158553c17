// anywidget front end of pi_lab's SessionWidget: binds the viewer core (src_frontend/core/) to
// the widget model. esbuild bundles this file to pi_lab/static/widget.js, loaded as `_esm`.
//
// Durable state lives in traitlets (model.get/set/save_changes); requests go out as custom
// messages with an id and come back as {kind: "response", id, ok, result | error} with optional
// binary buffers; deltas and live events arrive as custom messages too.

import type { AnyModel, RenderProps } from '@anywidget/types';

import { mountViewer } from './core/viewer';
import type { DeltaMessage, LiveEvent, Reply, Transport, ViewState } from './core/transport';

type Model = AnyModel<ViewState>;

interface Incoming {
  kind: 'response' | 'delta' | 'event';
  id?: number;
  ok?: boolean;
  result?: unknown;
  error?: string;
}

function asDataView(value: unknown): DataView | null {
  if (value instanceof DataView) {
    return value;
  }
  if (value instanceof ArrayBuffer) {
    return new DataView(value);
  }
  if (ArrayBuffer.isView(value)) {
    return new DataView(value.buffer, value.byteOffset, value.byteLength);
  }
  return null;
}

let nextId = 1;

/** A Transport over one anywidget model (one per rendered view). */
export function modelTransport(model: Model): Transport & { dispose(): void } {
  const pending = new Map<number, { resolve: (reply: Reply<unknown>) => void; reject: (e: Error) => void }>();
  const deltaListeners = new Set<(d: DeltaMessage) => void>();
  const eventListeners = new Set<(e: LiveEvent) => void>();
  const onMessage = (content: Incoming, buffers?: unknown[]): void => {
    if (!content || typeof content !== 'object') {
      return;
    }
    if (content.kind === 'response' && typeof content.id === 'number') {
      const waiter = pending.get(content.id);
      if (!waiter) {
        return;
      }
      pending.delete(content.id);
      if (content.ok) {
        const views = (buffers ?? []).map(asDataView).filter((b): b is DataView => b !== null);
        waiter.resolve({ result: content.result, buffers: views });
      } else {
        waiter.reject(new Error(content.error ?? 'request failed'));
      }
    } else if (content.kind === 'delta') {
      deltaListeners.forEach(cb => cb(content as unknown as DeltaMessage));
    } else if (content.kind === 'event') {
      eventListeners.forEach(cb => cb(content as unknown as LiveEvent));
    }
  };
  model.on('msg:custom', onMessage);
  return {
    // Read-only until the kernel allows writing; a kernel older than that protocol (no
    // `writable` trait) always wrote, so a missing value means writable.
    get writable(): boolean {
      const value = model.get('writable');
      return value === undefined || value === null ? true : Boolean(value);
    },
    get canAllowWrites(): boolean {
      return model.get('writable') !== undefined && model.get('writable') !== null;
    },
    request<T>(op: string, args: Record<string, unknown> = {}): Promise<Reply<T>> {
      const id = nextId++;
      return new Promise<Reply<T>>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (reply: Reply<unknown>) => void, reject });
        model.send({ kind: 'request', id, op, args });
      });
    },
    get<K extends keyof ViewState>(key: K): ViewState[K] {
      const value = model.get(key);
      return (key === 'structure' ? asDataView(value) : value) as ViewState[K];
    },
    set(state: Partial<ViewState>): void {
      for (const [key, value] of Object.entries(state)) {
        model.set(key as keyof ViewState, value as never);
      }
      model.save_changes();
    },
    on(key: keyof ViewState, callback: () => void): () => void {
      const name = `change:${String(key)}`;
      model.on(name, callback);
      return () => model.off(name, callback);
    },
    onDelta(callback) {
      deltaListeners.add(callback);
      return () => deltaListeners.delete(callback);
    },
    onEvent(callback) {
      eventListeners.add(callback);
      return () => eventListeners.delete(callback);
    },
    dispose(): void {
      model.off('msg:custom', onMessage);
      pending.forEach(waiter => waiter.reject(new Error('view closed')));
      pending.clear();
    }
  };
}

function render({ model, el }: RenderProps<ViewState>): () => void {
  const transport = modelTransport(model);
  const viewer = mountViewer(el, transport);
  // For tests and the benchmark: reach a view's decoded rows from the page.
  (el as HTMLElement & { piLabViewer?: unknown }).piLabViewer = viewer;
  return () => {
    viewer.unmount();
    transport.dispose();
  };
}

export default { render };
