-- tracebridge's commands; require('tracebridge').setup() connects.
if vim.g.loaded_tracebridge then
  return
end
vim.g.loaded_tracebridge = true

local function tb()
  return require('tracebridge')
end

vim.api.nvim_create_user_command('TracebridgeReview', function(a)
  tb().show_review(tonumber(a.args) or 0, true)
end, { nargs = '?', desc = 'tracebridge: show the review the AI presented (its references in the quickfix list)' })
vim.api.nvim_create_user_command('TracebridgeProposal', function(a)
  tb().show_proposal(a.args)
end, { nargs = '?', desc = 'tracebridge: show a proposed edit as a diff (ga approves, gr rejects)' })
vim.api.nvim_create_user_command('TracebridgeApprove', function(a)
  tb().decide(true, a.args)
end, { nargs = '?', desc = 'tracebridge: approve a proposed edit' })
vim.api.nvim_create_user_command('TracebridgeReject', function(a)
  tb().decide(false, a.args)
end, { nargs = '?', desc = 'tracebridge: reject a proposed edit' })
vim.api.nvim_create_user_command('TracebridgeSkip', function(a)
  tb().decide('skip', a.args)
end, { nargs = '?', desc = 'tracebridge: decide a proposed edit later (it stays pending)' })
vim.api.nvim_create_user_command('TracebridgeStatus', function()
  print(vim.inspect(tb().status()))
end, { desc = 'tracebridge: the connection to the workspace host' })
