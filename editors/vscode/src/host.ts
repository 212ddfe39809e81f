// The connection to the tracebridge workspace host (docs/pipe-protocol.md,
// "Editors"): NDJSON frames both ways over the host's Unix socket.
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

export interface Response {
  v: number;
  operationId: string;
  requestId?: string;
  ok: boolean;
  code?: string;
  message?: string;
  payload?: any;
}

export interface HostRequest {
  v: number;
  command: string;
  operationId: string;
  requestId?: string;
  payload?: any;
}

export interface Handlers {
  notify(name: string, payload: any): void;
  // request answers the host's request: a payload, or throws a CodedError.
  request(command: string, payload: any): Promise<any>;
  state(attached: boolean, detail: string): void;
}

export class CodedError extends Error {
  constructor(public code: string, message: string) {
    super(message);
  }
}

export interface Located {
  socket: string;
  root?: string;
}

// dataDir is where tracebridge keeps its state, as the CLI resolves it.
export function dataDir(setting: string): string {
  if (setting) return setting;
  const env = process.env;
  if (env.TRACEBRIDGE_DATA) return env.TRACEBRIDGE_DATA;
  if (env.XDG_STATE_HOME) return path.join(env.XDG_STATE_HOME, 'tracebridge');
  return path.join(os.homedir(), '.local', 'state', 'tracebridge');
}

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

export function inside(p: string, root: string): boolean {
  return p === root || p.startsWith(root + path.sep);
}

// locate finds the host serving folder: the socket setting, else
// $TRACEBRIDGE_HOST, else the registered host whose root holds the folder
// most closely.
export function locate(folder: string, data: string, socketSetting: string): Located | undefined {
  if (socketSetting) return { socket: socketSetting };
  if (process.env.TRACEBRIDGE_HOST) return { socket: process.env.TRACEBRIDGE_HOST };
  const dir = path.join(data, 'run', 'hosts');
  let best: { root: string; socket: string } | undefined;
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return undefined;
  }
  const f = real(folder);
  for (const n of names) {
    try {
      const e = JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8'));
      if (typeof e.root !== 'string' || typeof e.socket !== 'string') continue;
      const root = real(e.root);
      if (inside(f, root) && (!best || root.length > best.root.length)) best = { root, socket: e.socket };
    } catch {
      // a registry file being replaced: the next attempt reads it
    }
  }
  return best;
}

// untrusted says why the socket at p must not be attached to, or '' when it
// is this user's: a socket this user owns, in a directory only this user
// can enter. Another local user's socket would receive the unsaved text and
// send its own edits ($TRACEBRIDGE_HOST and the socket setting can name any
// path).
export function untrusted(p: string): string {
  if (process.platform === 'win32' || !process.getuid) return ''; // named pipes: the host's security descriptor admits only this user
  const uid = process.getuid();
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return ''; // nothing there: connecting fails and says so
  }
  if (!st.isSocket()) return `${p} is not a socket`;
  if (st.uid !== uid) return `${p} belongs to uid ${st.uid}, not to this user (uid ${uid}): refusing to send it your buffers`;
  const dir = path.dirname(p);
  let d: fs.Stats | undefined;
  try {
    d = fs.lstatSync(dir);
  } catch {
    d = undefined;
  }
  if (!d || !d.isDirectory() || d.uid !== uid || (d.mode & 0o077) !== 0) {
    return `${dir} is not a directory only this user can enter (0700, owned by uid ${uid}): refusing to attach to a socket in it`;
  }
  return '';
}

export class HostConnection {
  private sock: net.Socket | undefined;
  private buf = '';
  private next = 0;
  private pending = new Map<string, (r: Response) => void>();
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  attached = false;
  root = '';

  constructor(
    private find: () => Located | undefined,
    private editor: { editor: string; version: string },
    private h: Handlers,
    private onAttach: (answer: any) => void,
  ) {}

  connect(): void {
    if (this.sock || this.closed) return;
    const where = this.find();
    if (!where) {
      this.h.state(false, 'no tracebridge host serves this folder (start one: tracebridge up --root <workspace>)');
      this.later();
      return;
    }
    const why = untrusted(where.socket);
    if (why) {
      this.h.state(false, why);
      this.later();
      return;
    }
    const sock = net.createConnection(where.socket);
    this.sock = sock;
    sock.setEncoding('utf8');
    sock.on('connect', async () => {
      const r = await this.call('editor.attach', this.editor);
      if (!r.ok) {
        this.h.state(false, `the host refused to attach: ${r.code}: ${r.message}`);
        return;
      }
      this.attached = true;
      this.root = real(r.payload.root || where.root || '');
      this.h.state(true, this.root);
      this.onAttach(r.payload);
    });
    sock.on('data', (chunk: string) => {
      this.buf += chunk;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i).replace(/\r$/, '');
        this.buf = this.buf.slice(i + 1);
        if (line) this.frame(line);
      }
    });
    const gone = (why: string) => {
      if (this.sock !== sock) return;
      this.sock = undefined;
      this.attached = false;
      this.buf = '';
      for (const cb of this.pending.values()) cb({ v: 1, operationId: '', ok: false, code: 'PipeUnavailable', message: why });
      this.pending.clear();
      this.h.state(false, `detached (${why}); retrying`);
      this.later();
    };
    sock.on('error', (e) => gone(e.message));
    sock.on('close', () => gone('closed'));
  }

  private later(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect();
    }, 2000);
  }

  private frame(line: string): void {
    let msg: any;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    if (msg.notify) {
      this.h.notify(msg.notify, msg.payload);
    } else if (msg.command) {
      this.answer(msg as HostRequest);
    } else {
      const cb = this.pending.get(msg.operationId);
      this.pending.delete(msg.operationId);
      cb?.(msg as Response);
    }
  }

  private async answer(req: HostRequest): Promise<void> {
    const base = { v: 1, operationId: req.operationId, requestId: req.requestId || '' };
    try {
      const payload = await this.h.request(req.command, req.payload);
      this.write({ ...base, ok: true, payload });
    } catch (e: any) {
      this.write({ ...base, ok: false, code: e instanceof CodedError ? e.code : 'ToolError', message: String(e?.message ?? e) });
    }
  }

  private write(msg: object): boolean {
    if (!this.sock) return false;
    this.sock.write(JSON.stringify(msg) + '\n');
    return true;
  }

  // call sends a command and resolves with the host's answer (never
  // rejects: a broken connection is a PipeUnavailable answer).
  call(command: string, payload: any = {}): Promise<Response> {
    const operationId = `vscode-${process.pid}-${++this.next}`;
    return new Promise((resolve) => {
      this.pending.set(operationId, resolve);
      if (!this.write({ v: 1, command, requestId: '', operationId, payload })) {
        this.pending.delete(operationId);
        resolve({ v: 1, operationId, ok: false, code: 'PipeUnavailable', message: 'not connected to a tracebridge host' });
      }
    });
  }

  reconnect(): void {
    this.sock?.destroy();
    this.sock = undefined;
    this.attached = false;
    this.connect();
  }

  dispose(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.sock?.destroy();
  }
}
