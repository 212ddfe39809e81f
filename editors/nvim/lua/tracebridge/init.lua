-- tracebridge for Neovim (>= 0.7): the workspace host's eyes and hands.
--
-- It attaches to the tracebridge host serving the current directory
-- (docs/pipe-protocol.md, "Editors") and
--   * feeds it the focused buffer (its unsaved text too), the last visual
--     selection and vim.diagnostic's diagnostics, so an AI's
--     get_active_document, get_selection and get_diagnostics answer from
--     what you see;
--   * shows each review the AI presents in a scratch buffer, its
--     [file:line][] references in the quickfix list (broken ones marked);
--   * lets you review and decide the AI's proposed edits from a buffer;
--   * applies an approved edit to a buffer with unsaved changes as one
--     undoable change (the host never writes over unsaved work).
local M = {}

local uv = vim.loop

local defaults = {
  data_dir = nil, -- default: $TRACEBRIDGE_DATA, $XDG_STATE_HOME/tracebridge, ~/.local/state/tracebridge
  socket = nil, -- default: $TRACEBRIDGE_HOST, else the host whose root holds the working directory
  open_review = true, -- open the review buffer when the AI presents one
  debounce_ms = 100,
  retry_ms = 2000,
}

local state = {
  opts = vim.deepcopy(defaults),
  pipe = nil,
  connecting = false,
  attached = false,
  root = nil,
  socket = nil,
  pending = {}, -- operationId -> callback(response)
  next = 0,
  partial = '',
  proposals = {}, -- id -> summary, pending ones
  review = 0, -- newest review version shown
  last_error = nil,
  timers = {},
}

local function log(msg, level)
  state.last_error = level == vim.log.levels.ERROR and msg or state.last_error
  vim.notify('tracebridge: ' .. msg, level or vim.log.levels.INFO)
end

local function data_dir()
  if state.opts.data_dir then
    return state.opts.data_dir
  end
  local d = os.getenv('TRACEBRIDGE_DATA')
  if d and d ~= '' then
    return d
  end
  d = os.getenv('XDG_STATE_HOME')
  if d and d ~= '' then
    return d .. '/tracebridge'
  end
  return (os.getenv('HOME') or '') .. '/.local/state/tracebridge'
end

local function real(p)
  return uv.fs_realpath(p) or p
end

local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == root .. '/'
end

-- find_host returns the socket and root of the host serving folder: the
-- registered host whose root holds it most closely.
local function find_host(folder)
  if state.opts.socket then
    return state.opts.socket, nil
  end
  local env = os.getenv('TRACEBRIDGE_HOST')
  if env and env ~= '' then
    return env, nil
  end
  folder = real(folder)
  local best
  for _, f in ipairs(vim.fn.glob(data_dir() .. '/run/hosts/*.json', false, true)) do
    local ok, e = pcall(vim.json.decode, table.concat(vim.fn.readfile(f), '\n'))
    if ok and type(e) == 'table' and type(e.root) == 'string' and type(e.socket) == 'string' then
      if inside(folder, real(e.root)) and (not best or #e.root > #best.root) then
        best = e
      end
    end
  end
  if best then
    return best.socket, real(best.root)
  end
  return nil, nil
end

-- untrusted says why the socket at path must not be attached to, or nil
-- when it is this user's: a socket this user owns, in a directory only
-- this user can enter. Another local user's socket would receive the
-- unsaved text and send its own edits ($TRACEBRIDGE_HOST and the socket
-- option can name any path).
local function untrusted(path)
  if vim.fn.has('win32') == 1 then
    return nil -- named pipes: the host's security descriptor admits only this user
  end
  local uid = uv.getuid and uv.getuid() or uv.os_get_passwd().uid
  local st = uv.fs_lstat(path)
  if not st then
    return nil -- nothing there: connecting fails and says so
  end
  if st.type ~= 'socket' then
    return path .. ' is not a socket'
  end
  if st.uid ~= uid then
    return path .. ' belongs to uid ' .. st.uid .. ', not to this user (uid ' .. uid .. '): refusing to send it your buffers'
  end
  local dir = vim.fn.fnamemodify(path, ':h')
  local d = uv.fs_lstat(dir)
  if not d or d.type ~= 'directory' or d.uid ~= uid or require('bit').band(d.mode, 63) ~= 0 then
    return dir .. ' is not a directory only this user can enter (0700, owned by uid ' .. uid .. '): refusing to attach to a socket in it'
  end
  return nil
end

local function write(msg)
  if not state.pipe then
    return false
  end
  state.pipe:write(vim.json.encode(msg) .. '\n')
  return true
end

-- request sends a command; cb(response) gets the host's answer.
local function request(command, payload, cb)
  state.next = state.next + 1
  local op = string.format('nvim-%d-%d', vim.fn.getpid(), state.next)
  if cb then
    state.pending[op] = cb
  end
  local ok = write({ v = 1, command = command, requestId = '', operationId = op, payload = payload or vim.empty_dict() })
  if not ok then
    state.pending[op] = nil
  end
  return ok
end

local function respond(req, ok, payload, code, message)
  write({ v = 1, requestId = req.requestId or '', operationId = req.operationId, ok = ok, payload = payload, code = code, message = message })
end

local function buf_by_path(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and real(vim.api.nvim_buf_get_name(b)) == path then
      return b
    end
  end
  return nil
end

local function buf_text(b)
  local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  if vim.bo[b].eol or vim.bo[b].fixeol then
    text = text .. '\n'
  end
  return text
end

-- document describes buffer b as editor.document and editor.focus take it;
-- nil for a buffer that is not a file of the workspace.
local function document(b)
  if not state.root or not vim.api.nvim_buf_is_valid(b) or vim.bo[b].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(b)
  if name == '' then
    return nil
  end
  name = real(name)
  if not inside(name, state.root) then
    return nil
  end
  local d = { path = name, language = vim.bo[b].filetype, version = vim.api.nvim_buf_get_changedtick(b), dirty = vim.bo[b].modified }
  if d.dirty then
    d.text = buf_text(b)
  end
  return d
end

-- replaced[b] are b's '< and '> marks right after the plugin replaced b's
-- whole text (an approved edit): Neovim moves a visual mark in replaced
-- lines to the first of them, so what they point at is not a selection the
-- user made (seed 154: get_selection answered line 1).
local replaced = {}

local function marks_key(s, e)
  return table.concat({ s[1], s[2], e[1], e[2] }, ':')
end

-- selection returns the last visual selection of b ('< and '>), with its
-- text; nil when there is none.
local function selection(b)
  local s = vim.api.nvim_buf_get_mark(b, '<')
  local e = vim.api.nvim_buf_get_mark(b, '>')
  if s[1] == 0 or e[1] == 0 or e[1] < s[1] or replaced[b] == marks_key(s, e) then
    return nil
  end
  local last = vim.api.nvim_buf_line_count(b)
  if e[1] > last then
    return nil
  end
  local end_line = vim.api.nvim_buf_get_lines(b, e[1] - 1, e[1], false)[1] or ''
  local sc, ec
  if vim.fn.visualmode() == 'V' then
    sc, ec = 0, #end_line
  else
    sc, ec = s[2], math.min(e[2] + 1, #end_line)
    while ec < #end_line and bit.band(end_line:byte(ec + 1), 0xC0) == 0x80 do
      ec = ec + 1 -- the whole of a multibyte character
    end
  end
  local ok, lines = pcall(vim.api.nvim_buf_get_text, b, s[1] - 1, sc, e[1] - 1, ec, {})
  if not ok then
    return nil
  end
  return { startLine = s[1], startCol = sc + 1, endLine = e[1], endCol = ec + 1, text = table.concat(lines, '\n') }
end

function M.push_focus()
  if not state.attached then
    return
  end
  local b = vim.api.nvim_get_current_buf()
  local d = document(b)
  if not d then
    return
  end
  d.selection = selection(b)
  request('editor.focus', d, function(r)
    if not r.ok then
      state.last_error = r.message
    end
  end)
end

function M.push_document(b, closed)
  if not state.attached then
    return
  end
  local d = document(b)
  if not d then
    return
  end
  d.language = nil
  if closed then
    d.closed, d.dirty, d.text = true, nil, nil
  end
  request('editor.document', d)
end

local severities = { 'error', 'warning', 'info', 'hint' }

function M.push_diagnostics()
  if not state.attached then
    return
  end
  local out = {}
  for _, d in ipairs(vim.diagnostic.get()) do
    local name = vim.api.nvim_buf_is_valid(d.bufnr) and vim.api.nvim_buf_get_name(d.bufnr) or ''
    if name ~= '' then
      table.insert(out, {
        file = real(name),
        line = d.lnum + 1,
        column = d.col + 1,
        endLine = (d.end_lnum or d.lnum) + 1,
        endColumn = (d.end_col or d.col) + 1,
        severity = severities[d.severity] or 'error',
        source = d.source,
        code = d.code and tostring(d.code) or nil,
        message = d.message,
      })
    end
  end
  request('editor.diagnostics', { diagnostics = out })
end

local function debounce(name, fn)
  local t = state.timers[name]
  if not t then
    t = uv.new_timer()
    state.timers[name] = t
  end
  t:stop()
  t:start(state.opts.debounce_ms, 0, vim.schedule_wrap(fn))
end

-- Reviews -------------------------------------------------------------------

local function scratch(name, filetype)
  local b = -1
  for _, x in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(x) == name then
      b = x
    end
  end
  if b == -1 then
    b = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(b, name)
  end
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].swapfile = false
  vim.bo[b].filetype = filetype
  return b
end

local function set_text(b, text)
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[b].modifiable = false
  vim.bo[b].modified = false
end

local function show_buffer(b)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      return
    end
  end
  local cur = vim.api.nvim_get_current_win()
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, b)
  vim.api.nvim_set_current_win(cur)
end

-- show_review fetches review version n (0: the newest), puts it in the
-- review buffer and its references in the quickfix list.
function M.show_review(n, open)
  request('reviews.show', { version = n or 0 }, function(r)
    if not r.ok then
      log('review: ' .. (r.message or r.code or 'refused'), vim.log.levels.WARN)
      return
    end
    local v = r.payload
    state.review = v.version
    local b = scratch('tracebridge://review', 'markdown')
    state.review_buf = b
    set_text(b, v.content)
    local items, broken = {}, 0
    for _, ref in ipairs(v.refs or {}) do
      local text = ref.text
      if not ref.ok then
        broken = broken + 1
        text = text .. '  [broken: ' .. (ref.problem or '?') .. ']'
      end
      local file = ref.path or ''
      if file ~= '' and file:sub(1, 1) ~= '/' then
        file = state.root .. '/' .. file
      end
      table.insert(items, { filename = file ~= '' and file or nil, lnum = ref.line, col = ref.column or 1, text = text, type = ref.ok and '' or 'E' })
    end
    vim.fn.setqflist({}, 'r', { title = 'tracebridge review v' .. v.version, items = items })
    if open ~= false then
      show_buffer(b)
    end
    log(string.format('review v%d: %d references in the quickfix list (%d broken)', v.version, #items, broken))
  end)
end

-- Proposals ----------------------------------------------------------------

local function oldest_pending()
  local ids = vim.tbl_keys(state.proposals)
  table.sort(ids)
  return ids[1]
end

-- show_proposal opens proposal id (default: the oldest pending) as a diff
-- buffer: ga approves, gr rejects.
function M.show_proposal(id)
  id = (id ~= nil and id ~= '') and id or vim.b.tracebridge_proposal or oldest_pending()
  if not id then
    log('no pending proposal')
    return
  end
  request('proposals.show', { id = id }, function(r)
    if not r.ok then
      log('proposal ' .. id .. ': ' .. (r.message or r.code), vim.log.levels.WARN)
      return
    end
    local p = r.payload
    local b = scratch('tracebridge://proposal/' .. id, 'diff')
    local head = { '# proposal ' .. p.id .. ' — ' .. p.state }
    if p.description and p.description ~= '' then
      table.insert(head, '# ' .. p.description)
    end
    if p.code and p.code ~= '' then
      table.insert(head, '# approving it now fails: ' .. p.code .. ': ' .. (p.message or ''))
    end
    table.insert(head, '# ga: approve   gr: reject   gs: skip (decide later)')
    set_text(b, table.concat(head, '\n') .. '\n' .. (p.preview or ''))
    vim.b[b].tracebridge_proposal = p.id
    vim.b[b].tracebridge_hash = p.contentHash
    vim.api.nvim_buf_set_keymap(b, 'n', 'ga', '<cmd>TracebridgeApprove<cr>', { noremap = true, silent = true })
    vim.api.nvim_buf_set_keymap(b, 'n', 'gr', '<cmd>TracebridgeReject<cr>', { noremap = true, silent = true })
    vim.api.nvim_buf_set_keymap(b, 'n', 'gs', '<cmd>TracebridgeSkip<cr>', { noremap = true, silent = true })
    vim.api.nvim_set_current_buf(b)
  end)
end

-- decide approves (true), rejects (false) or skips ('skip': decide later)
-- proposal id (default: the one in the current buffer, else the oldest
-- pending), bound to the content shown.
function M.decide(approve, id)
  id = (id ~= nil and id ~= '') and id or vim.b.tracebridge_proposal or oldest_pending()
  if not id then
    log('no pending proposal')
    return
  end
  local function send(hash)
    request('proposals.decide', { id = id, approve = approve == true, skip = approve == 'skip', contentHash = hash, by = 'nvim' }, function(r)
      if not r.ok then
        log('decide ' .. id .. ': ' .. (r.code or '') .. ' ' .. (r.message or ''), vim.log.levels.ERROR)
        return
      end
      local p = r.payload
      local msg = 'proposal ' .. id .. ' ' .. p.state .. (approve == 'skip' and ' (decision deferred)' or '')
      if p.state == 'failed' then
        msg = msg .. ' (' .. (p.code or '') .. ': ' .. (p.message or '') .. ')'
      end
      log(msg, p.state == 'failed' and vim.log.levels.ERROR or nil)
    end)
  end
  if vim.b.tracebridge_proposal == id and vim.b.tracebridge_hash then
    send(vim.b.tracebridge_hash)
    return
  end
  request('proposals.show', { id = id }, function(r)
    if r.ok then
      send(r.payload.contentHash)
    else
      log('proposal ' .. id .. ': ' .. (r.message or r.code), vim.log.levels.WARN)
    end
  end)
end

-- The host's requests and notifications ----------------------------------

-- apply_edit replaces a buffer's text as one undoable change, only if the
-- buffer is still at the version the host checked.
local function apply_edit(req)
  local a = req.payload
  local b = buf_by_path(real(a.path))
  if not b then
    respond(req, false, nil, 'Drift', a.path .. ' is not open in Neovim')
    return
  end
  local tick = vim.api.nvim_buf_get_changedtick(b)
  if tick ~= a.version then
    respond(req, false, nil, 'Drift', string.format('%s is at version %d, not %d: it changed since the host checked it', a.path, tick, a.version))
    return
  end
  local lines = vim.split(a.text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  replaced[b] = marks_key(vim.api.nvim_buf_get_mark(b, '<'), vim.api.nvim_buf_get_mark(b, '>'))
  respond(req, true, { version = vim.api.nvim_buf_get_changedtick(b) })
  log('applied proposal ' .. (a.proposal or '') .. ' to the unsaved buffer ' .. vim.fn.fnamemodify(a.path, ':~:.') .. ' (u undoes it)')
  M.push_document(b)
end

local function on_notify(n)
  if n.notify == 'review.presented' then
    M.show_review(n.payload.version, state.opts.open_review)
  elseif n.notify == 'proposal.changed' then
    local p = n.payload
    if p.state == 'pending' then
      state.proposals[p.id] = p
      log('proposal ' .. p.id .. ' waits for you: :TracebridgeProposal ' .. p.id)
    else
      state.proposals[p.id] = nil
    end
  end
end

local function on_frame(line)
  local ok, msg = pcall(vim.json.decode, line)
  if not ok or type(msg) ~= 'table' then
    return
  end
  if msg.notify then
    on_notify(msg)
  elseif msg.command == 'editor.apply_edit' then
    apply_edit(msg)
  elseif msg.command then
    respond(msg, false, nil, 'UnknownCommand', 'Neovim does not answer ' .. tostring(msg.command))
  else
    if msg.payload == vim.NIL then
      msg.payload = nil
    end
    local cb = state.pending[msg.operationId]
    state.pending[msg.operationId] = nil
    if cb then
      cb(msg)
    end
  end
end

-- Connection ---------------------------------------------------------------

local function disconnected(reason)
  if state.pipe then
    pcall(function() state.pipe:close() end)
  end
  local was = state.attached
  state.pipe, state.attached, state.connecting, state.pending, state.partial = nil, false, false, {}, ''
  if was then
    log('detached from the host (' .. reason .. '); retrying', vim.log.levels.WARN)
  end
  local t = state.timers.retry or uv.new_timer()
  state.timers.retry = t
  t:stop()
  t:start(state.opts.retry_ms, 0, vim.schedule_wrap(M.connect))
end

function M.connect()
  if state.pipe or state.connecting then
    return
  end
  local socket, root = find_host(vim.fn.getcwd())
  if not socket then
    state.last_error = 'no tracebridge host serves ' .. vim.fn.getcwd() .. ' (start one: tracebridge up --root <workspace>)'
    disconnected('no host')
    return
  end
  local why = untrusted(socket)
  if why then
    if state.last_error ~= why then
      vim.notify('tracebridge: ' .. why, vim.log.levels.ERROR)
    end
    state.last_error = why
    disconnected('refused')
    return
  end
  state.connecting = true
  local p = uv.new_pipe(false)
  p:connect(socket, function(err)
    vim.schedule(function()
      if err then
        state.connecting = false
        pcall(function() p:close() end)
        state.last_error = 'cannot connect to ' .. socket .. ': ' .. err
        disconnected(err)
        return
      end
      state.pipe, state.socket, state.connecting = p, socket, false
      p:read_start(function(rerr, chunk)
        if rerr or not chunk then
          vim.schedule(function()
            disconnected(rerr or 'closed')
          end)
          return
        end
        local data = state.partial .. chunk
        local lines = vim.split(data, '\n', { plain = true })
        state.partial = table.remove(lines)
        vim.schedule(function()
          for _, l in ipairs(lines) do
            if l ~= '' then
              on_frame(l)
            end
          end
        end)
      end)
      request('editor.attach', { editor = 'nvim', version = tostring(vim.version().major .. '.' .. vim.version().minor .. '.' .. vim.version().patch) }, function(r)
        if not r.ok then
          log('attach refused: ' .. (r.message or r.code), vim.log.levels.ERROR)
          return
        end
        state.attached, state.root = true, real(r.payload.root or root)
        state.proposals = {}
        for _, pr in ipairs(r.payload.proposals or {}) do
          state.proposals[pr.id] = pr
        end
        M.push_focus()
        M.push_diagnostics()
      end)
    end)
  end)
end

-- status returns what the plugin knows, for :TracebridgeStatus and tests.
function M.status()
  return {
    attached = state.attached,
    socket = state.socket,
    root = state.root,
    pending = vim.tbl_keys(state.proposals),
    review = state.review,
    review_buf = state.review_buf,
    last_error = state.last_error,
  }
end

function M.setup(opts)
  state.opts = vim.tbl_extend('force', vim.deepcopy(defaults), opts or {})
  local g = vim.api.nvim_create_augroup('tracebridge', { clear = true })
  local function focus()
    debounce('focus', M.push_focus)
  end
  vim.api.nvim_create_autocmd({ 'BufEnter', 'TextChanged', 'TextChangedI', 'BufWritePost', 'CursorHold', 'ModeChanged' }, { group = g, callback = focus })
  vim.api.nvim_create_autocmd({ 'BufWritePost', 'BufReadPost' }, {
    group = g,
    callback = function(a)
      M.push_document(a.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufDelete', 'BufWipeout' }, {
    group = g,
    callback = function(a)
      M.push_document(a.buf, true)
    end,
  })
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    group = g,
    callback = function()
      debounce('diagnostics', M.push_diagnostics)
    end,
  })
  vim.api.nvim_create_autocmd('DirChanged', {
    group = g,
    callback = function()
      disconnected('the working directory changed')
    end,
  })
  M.connect()
end

return M
