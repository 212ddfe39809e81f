// tracebridge for VS Code: attaches to the tracebridge workspace host of the
// open folder (docs/pipe-protocol.md, "Editors"), feeds it the focused
// document (its unsaved text too), the selection and the editor's
// diagnostics, shows the AI's reviews and proposed edits, and applies an
// approved edit to an unsaved buffer as one undoable edit.
import * as fs from 'fs';
import * as vscode from 'vscode';
import { CodedError, dataDir, HostConnection, inside, locate } from './host';
import { Proposal, Proposals, scheme } from './proposals';
import { ReviewPanel } from './review';

function debounce(ms: number, fn: () => void): () => void {
  let t: NodeJS.Timeout | undefined;
  return () => {
    if (t) clearTimeout(t);
    t = setTimeout(fn, ms);
  };
}

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

const severities = ['error', 'warning', 'info', 'hint'];

export function activate(ctx: vscode.ExtensionContext): void {
  const cfg = () => vscode.workspace.getConfiguration('tracebridge');
  const folder = () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const log = vscode.window.createOutputChannel('tracebridge', { log: true });
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  status.command = 'tracebridge.reconnect';
  status.name = 'tracebridge';
  status.show();

  let proposals: Proposals;
  const review = new ReviewPanel(() => host.root);
  const showReview = async (version: number) => {
    const r = await host.call('reviews.show', { version });
    if (r.ok) await review.show(r.payload);
    else if (version !== 0) vscode.window.showWarningMessage(`tracebridge: review: ${r.code}: ${r.message}`);
  };

  const host: HostConnection = new HostConnection(
    () => {
      const f = folder();
      const data = dataDir(cfg().get('dataDir', ''));
      const found = f ? locate(f, data, cfg().get('socket', '')) : undefined;
      log.info(`folder ${f ?? '(none)'}, data dir ${data}: ${found ? 'host at ' + found.socket : 'no host'}`);
      return found;
    },
    { editor: 'vscode', version: vscode.version },
    {
      notify(name, payload) {
        if (name === 'review.presented') showReview(payload.version);
        else if (name === 'proposal.changed') proposals.changedState(payload as Proposal);
      },
      async request(command, payload) {
        if (command === 'editor.apply_edit') return applyEdit(payload);
        throw new CodedError('UnknownCommand', `VS Code does not answer ${command}`);
      },
      state(attached, detail) {
        log.info(attached ? `attached to the host of ${detail}` : detail);
        status.text = attached ? '$(plug) tracebridge' : '$(debug-disconnect) tracebridge';
        status.tooltip = attached ? `tracebridge: attached to the host of ${detail}` : `tracebridge: ${detail}`;
      },
    },
    (answer) => {
      proposals.pending.clear();
      for (const p of answer.proposals ?? []) proposals.pending.set(p.id, p);
      pushFocus();
      pushDiagnostics();
      if (answer.review > 0) showReview(answer.review);
    },
  );
  proposals = new Proposals(host);

  // document describes doc as editor.focus and editor.document take it;
  // undefined for one that is not a file of the workspace.
  const document = (doc: vscode.TextDocument): any => {
    if (!host.attached || doc.uri.scheme !== 'file') return undefined;
    const p = real(doc.uri.fsPath);
    if (!inside(p, host.root)) return undefined;
    return { path: p, language: doc.languageId, version: doc.version, dirty: doc.isDirty, text: doc.isDirty ? doc.getText() : undefined };
  };
  const pushFocus = () => {
    const ed = vscode.window.activeTextEditor;
    const d = ed && document(ed.document);
    if (!d) return;
    const sel = ed!.selection;
    if (!sel.isEmpty) {
      d.selection = {
        startLine: sel.start.line + 1,
        startCol: sel.start.character + 1,
        endLine: sel.end.line + 1,
        endCol: sel.end.character + 1,
        text: ed!.document.getText(sel),
      };
    }
    host.call('editor.focus', d);
  };
  const pushDocument = (doc: vscode.TextDocument, closed = false) => {
    const d = document(doc);
    if (!d) return;
    delete d.language;
    if (closed) Object.assign(d, { closed: true, dirty: false, text: undefined });
    host.call('editor.document', d);
  };
  const pushDiagnostics = () => {
    if (!host.attached) return;
    const out: any[] = [];
    for (const [uri, diags] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== 'file') continue;
      for (const d of diags) {
        const code = typeof d.code === 'object' ? d.code.value : d.code;
        out.push({
          file: real(uri.fsPath),
          line: d.range.start.line + 1,
          column: d.range.start.character + 1,
          endLine: d.range.end.line + 1,
          endColumn: d.range.end.character + 1,
          severity: severities[d.severity] ?? 'error',
          source: d.source,
          code: code === undefined ? undefined : String(code),
          message: d.message,
        });
      }
    }
    host.call('editor.diagnostics', { diagnostics: out });
  };

  // applyEdit replaces a document's text as one undoable edit, only if it is
  // still at the version the host checked.
  const applyEdit = async (a: { path: string; version: number; text: string; proposal: string }) => {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && real(d.uri.fsPath) === real(a.path));
    if (!doc) throw new CodedError('Drift', `${a.path} is not open in VS Code`);
    if (doc.version !== a.version) throw new CodedError('Drift', `${a.path} is at version ${doc.version}, not ${a.version}: it changed since the host checked it`);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), a.text);
    if (!(await vscode.workspace.applyEdit(edit))) throw new CodedError('Drift', `VS Code refused the edit to ${a.path}`);
    pushDocument(doc);
    vscode.window.showInformationMessage(`tracebridge: applied proposal ${a.proposal} to the unsaved ${vscode.workspace.asRelativePath(doc.uri)} (Undo takes it back)`);
    return { version: doc.version };
  };

  const focusSoon = debounce(100, pushFocus);
  const diagnosticsSoon = debounce(200, pushDiagnostics);
  const others = new Map<string, () => void>();
  ctx.subscriptions.push(
    log,
    status,
    review,
    { dispose: () => host.dispose() },
    vscode.workspace.registerTextDocumentContentProvider(scheme, proposals),
    vscode.window.onDidChangeActiveTextEditor(focusSoon),
    vscode.window.onDidChangeTextEditorSelection(focusSoon),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === vscode.window.activeTextEditor?.document) return focusSoon();
      const k = e.document.uri.toString();
      if (!others.has(k)) others.set(k, debounce(100, () => pushDocument(e.document)));
      others.get(k)!();
    }),
    vscode.workspace.onDidSaveTextDocument((d) => pushDocument(d)),
    vscode.workspace.onDidCloseTextDocument((d) => pushDocument(d, true)),
    vscode.languages.onDidChangeDiagnostics(diagnosticsSoon),
    vscode.commands.registerCommand('tracebridge.showReview', () => showReview(0)),
    vscode.commands.registerCommand('tracebridge.showProposal', (id?: string) => proposals.show(id)),
    vscode.commands.registerCommand('tracebridge.approve', (id?: string) => proposals.decide(true, typeof id === 'string' ? id : undefined)),
    vscode.commands.registerCommand('tracebridge.reject', (id?: string) => proposals.decide(false, typeof id === 'string' ? id : undefined)),
    vscode.commands.registerCommand('tracebridge.skip', (id?: string) => proposals.decide('skip', typeof id === 'string' ? id : undefined)),
    vscode.commands.registerCommand('tracebridge.reconnect', () => host.reconnect()),
  );
  status.text = '$(debug-disconnect) tracebridge';
  status.tooltip = 'tracebridge: connecting';
  host.connect();
}

export function deactivate(): void {}
