// Proposed edits: shown as a diff editor per file (the text as the user sees
// it now, left; with the proposal applied, right) with Approve and Reject in
// the editor's title. The decision is the host's proposals.decide, bound to
// the content hash the user was shown.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { HostConnection } from './host';

export const scheme = 'tracebridge-proposal';

interface Edit {
  original: string;
  replacement: string;
}

interface FileChange {
  path: string;
  edits: Edit[];
}

export interface Proposal {
  id: string;
  state: string;
  contentHash: string;
  description?: string;
  files: FileChange[];
  code?: string;
  message?: string;
}

// applyEdits is the host's rule: each original occurs exactly once.
function applyEdits(text: string, edits: Edit[]): { text: string; problem?: string } {
  for (const [i, e] of edits.entries()) {
    const n = text.split(e.original).length - 1;
    if (n !== 1) return { text, problem: `edit ${i + 1}'s original text occurs ${n} times` };
    text = text.replace(e.original, () => e.replacement);
  }
  return { text };
}

export class Proposals implements vscode.TextDocumentContentProvider {
  pending = new Map<string, Proposal>();
  private shown = new Map<string, Proposal>(); // by id: what the user was shown
  private texts = new Map<string, string>(); // by URI
  private changed = new vscode.EventEmitter<vscode.Uri>();
  onDidChange = this.changed.event;

  constructor(private host: HostConnection) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  // changedState records a proposal.changed notification.
  changedState(p: Proposal): void {
    if (p.state === 'pending') {
      const isNew = !this.pending.has(p.id);
      this.pending.set(p.id, p);
      if (isNew) {
        const files = p.files.map((f) => f.path).join(', ');
        vscode.window.showInformationMessage(`tracebridge: the AI proposes an edit to ${files}${p.description ? ': ' + p.description : ''}`, 'Review').then((a) => {
          if (a === 'Review') this.show(p.id);
        });
      }
    } else {
      this.pending.delete(p.id);
    }
  }

  private current(rel: string): string {
    const abs = path.join(this.host.root, rel);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === abs);
    if (doc) return doc.getText();
    try {
      return fs.readFileSync(abs, 'utf8');
    } catch {
      return '';
    }
  }

  // show opens proposal id (default: the oldest pending) as diff editors.
  async show(id?: string): Promise<void> {
    id = id || [...this.pending.keys()].sort()[0];
    if (!id) {
      vscode.window.showInformationMessage('tracebridge: no proposed edit is pending');
      return;
    }
    const r = await this.host.call('proposals.show', { id });
    if (!r.ok) {
      vscode.window.showErrorMessage(`tracebridge: proposal ${id}: ${r.code}: ${r.message}`);
      return;
    }
    const p = r.payload as Proposal;
    this.shown.set(p.id, p);
    for (const f of p.files) {
      const base = this.current(f.path);
      const next = applyEdits(base, f.edits);
      const left = vscode.Uri.from({ scheme, path: `/${p.id}/base/${f.path}` });
      const right = vscode.Uri.from({ scheme, path: `/${p.id}/proposed/${f.path}` });
      this.texts.set(left.toString(), base);
      this.texts.set(right.toString(), next.problem ? `${base}\n// tracebridge: approving fails now: ${next.problem}\n` : next.text);
      this.changed.fire(left);
      this.changed.fire(right);
      await vscode.commands.executeCommand('vscode.diff', left, right, `Proposed: ${f.path} (${p.id.slice(-6)})`, { preview: false });
    }
    if (p.code) vscode.window.showWarningMessage(`tracebridge: approving ${p.id} now fails: ${p.code}: ${p.message}`);
  }

  // idOf is the proposal the active editor shows.
  private idOf(): string | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (uri?.scheme === scheme) return uri.path.split('/')[1];
    return [...this.pending.keys()].sort()[0];
  }

  // decide approves (true), rejects (false) or skips ('skip': it stays
  // pending) a proposal.
  async decide(approve: boolean | 'skip', id?: string): Promise<void> {
    id = typeof id === 'string' && id ? id : this.idOf();
    if (!id) {
      vscode.window.showInformationMessage('tracebridge: no proposed edit to decide');
      return;
    }
    let shown = this.shown.get(id);
    if (!shown) {
      const r = await this.host.call('proposals.show', { id });
      if (!r.ok) {
        vscode.window.showErrorMessage(`tracebridge: proposal ${id}: ${r.code}: ${r.message}`);
        return;
      }
      shown = r.payload as Proposal;
    }
    const r = await this.host.call('proposals.decide', { id, approve: approve === true, skip: approve === 'skip', contentHash: shown.contentHash, by: 'vscode' });
    if (!r.ok) {
      vscode.window.showErrorMessage(`tracebridge: deciding ${id}: ${r.code}: ${r.message}`);
      return;
    }
    const p = r.payload as Proposal;
    this.closeDiffs(id);
    if (p.state === 'failed') vscode.window.showErrorMessage(`tracebridge: proposal ${id} failed: ${p.code}: ${p.message}`);
    else vscode.window.showInformationMessage(`tracebridge: proposal ${id} ${p.state}${approve === 'skip' ? ' (decision deferred)' : ''}`);
  }

  private closeDiffs(id: string): void {
    for (const g of vscode.window.tabGroups.all) {
      for (const t of g.tabs) {
        const input = t.input;
        if (input instanceof vscode.TabInputTextDiff && input.modified.scheme === scheme && input.modified.path.startsWith(`/${id}/`)) {
          vscode.window.tabGroups.close(t);
        }
      }
    }
  }
}
