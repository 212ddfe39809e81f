// The review panel: the AI's review as the host keeps it, re-rendered on
// every presentation, its references opening the editor at the line.
//
// References, as Dialectic writes them:
//   [file:line][] and [`file:line`][] (also file:line-line, file:line:col):
//     checked by the host against the workspace;
//   [text](file:line): checked here (the file exists and has the line);
//   [text](function:Name), class:Name, symbol:Name: resolved by the host's
//     language server; where it could not, through the editor's workspace
//     symbols.
// A reference that does not resolve is shown struck through, with why.
import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';

export interface HostRef {
  text: string;
  path: string;
  line: number;
  endLine?: number;
  column?: number;
  symbol?: string; // function:Name: the host's language server resolved it
  ok: boolean;
  problem?: string;
}

export interface ReviewVersion {
  version: number;
  content: string;
  refs: HostRef[];
}

interface Target {
  uri?: vscode.Uri;
  line: number; // 1-based
  column: number; // 1-based
  problem?: string;
}

const symbolKinds: Record<string, vscode.SymbolKind[]> = {
  function: [vscode.SymbolKind.Function, vscode.SymbolKind.Method],
  class: [vscode.SymbolKind.Class, vscode.SymbolKind.Struct, vscode.SymbolKind.Interface],
  symbol: [],
};

function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export class ReviewPanel {
  private panel: vscode.WebviewPanel | undefined;
  private targets: Target[] = [];
  version = 0;

  constructor(private root: () => string) {}

  // show renders v, opening the panel beside the editor when it is closed.
  async show(v: ReviewVersion): Promise<void> {
    this.version = v.version;
    const { markdown, targets } = await this.resolve(v);
    this.targets = targets;
    let body: string;
    try {
      body = await vscode.commands.executeCommand<string>('markdown.api.render', markdown);
    } catch {
      body = `<pre>${escapeHTML(markdown)}</pre>`;
    }
    body = body.replace(/<a href="tbref:(\d+)"([^>]*)>/g, (_m, n: string, rest: string) => {
      const t = this.targets[Number(n)];
      const cls = t?.problem ? 'ref broken' : 'ref';
      const title = t?.problem ? `broken: ${t.problem}` : `open ${t?.uri ? vscode.workspace.asRelativePath(t.uri) : ''}:${t?.line}`;
      return `<a href="#" data-ref="${n}" class="${cls}" title="${escapeHTML(title)}"${rest}>`;
    });
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('tracebridge.review', 'tracebridge review', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        enableScripts: true,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((m) => this.open(Number(m.ref)));
    }
    this.panel.title = `tracebridge review v${v.version}`;
    this.panel.webview.html = this.page(body, v.version);
  }

  private page(body: string, version: number): string {
    const nonce = crypto.randomBytes(16).toString('hex');
    const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; form-action 'none'; base-uri 'none';`;
    return `<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}">
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1em; }
a.ref { cursor: pointer; }
a.ref.broken { color: var(--vscode-errorForeground); text-decoration: line-through; }
code { font-family: var(--vscode-editor-font-family); }
</style></head>
<body data-version="${version}">${body}
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-ref]');
  if (!a) return;
  e.preventDefault();
  vscode.postMessage({ ref: Number(a.dataset.ref) });
});
</script></body></html>`;
  }

  // resolve rewrites every reference into a tbref:N link and resolves its
  // target.
  private async resolve(v: ReviewVersion): Promise<{ markdown: string; targets: Target[] }> {
    const targets: Target[] = [];
    const root = this.root();
    let md = v.content;
    // The host's references, each written exactly as it found it.
    const seen = new Set<string>();
    for (const r of v.refs ?? []) {
      if (seen.has(r.text)) continue;
      seen.add(r.text);
      if (r.symbol && !r.ok) continue; // the editor's symbols may know it (below)
      // [x][] → x; [x](function:Name) and [x](file:line) → x
      const label = r.text.endsWith(')') ? r.text.slice(1, r.text.lastIndexOf('](')) : r.text.slice(1, r.text.length - 3);
      const n = targets.length;
      targets.push({ uri: vscode.Uri.file(path.resolve(root, r.path)), line: r.line, column: r.column || 1, problem: r.ok ? undefined : r.problem });
      md = md.split(r.text).join(`[${label}](tbref:${n})`);
    }
    // [text](target) links this extension resolves.
    const links = [...md.matchAll(/\[([^\]\n]+)\]\(([^)\s]+)\)/g)];
    for (const m of links) {
      const target = m[2];
      if (target.startsWith('tbref:')) continue;
      let t: Target | undefined;
      const sym = /^(function|class|symbol):(.+)$/.exec(target);
      const loc = /^([^:]+):(\d+)(?::(\d+))?$/.exec(target);
      if (sym) {
        t = await this.symbol(sym[1], decodeURIComponent(sym[2]));
      } else if (loc && !/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
        t = await this.location(path.resolve(root, loc[1]), Number(loc[2]), Number(loc[3] || 1));
      }
      if (!t) continue;
      const n = targets.length;
      targets.push(t);
      md = md.replace(m[0], `[${m[1]}](tbref:${n})`);
    }
    return { markdown: md, targets };
  }

  private async location(file: string, line: number, column: number): Promise<Target> {
    const uri = vscode.Uri.file(file);
    try {
      const doc = await vscode.workspace.openTextDocument(uri);
      if (line < 1 || line > doc.lineCount) return { uri, line, column, problem: `line ${line} is outside the file (${doc.lineCount} lines)` };
      return { uri, line, column };
    } catch (e: any) {
      return { uri, line, column, problem: `file not readable: ${e?.message ?? e}` };
    }
  }

  private async symbol(kind: string, name: string): Promise<Target> {
    let found: vscode.SymbolInformation[] = [];
    try {
      found = (await vscode.commands.executeCommand<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', name)) ?? [];
    } catch {
      // no symbol provider for these files
    }
    const kinds = symbolKinds[kind];
    const exact = found.filter((s) => s.name === name && (kinds.length === 0 || kinds.includes(s.kind)));
    if (exact.length === 0) return { line: 1, column: 1, problem: `no ${kind} named ${name} among the editor's workspace symbols` };
    const s = exact[0];
    return { uri: s.location.uri, line: s.location.range.start.line + 1, column: s.location.range.start.character + 1 };
  }

  private async open(n: number): Promise<void> {
    const t = this.targets[n];
    if (!t) return;
    if (t.problem || !t.uri) {
      vscode.window.showWarningMessage(`tracebridge: this reference is broken: ${t.problem}`);
      return;
    }
    const pos = new vscode.Position(t.line - 1, t.column - 1);
    await vscode.window.showTextDocument(t.uri, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(pos, pos) });
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
