package landlock

// Landlock's system calls and flags (include/uapi/linux/landlock.h; the
// calls have one number on every architecture since 5.13), and the two
// values package syscall lacks.
const (
	sysCreateRuleset = 444
	sysAddRule       = 445
	sysRestrictSelf  = 446

	createRulesetVersion = 1 << 0

	rulePathBeneath = 1
	ruleNetPort     = 2

	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13 // ABI 2
	fsTruncate   = 1 << 14 // ABI 3
	fsIoctlDev   = 1 << 15 // ABI 5

	netBindTCP    = 1 << 0 // ABI 4
	netConnectTCP = 1 << 1

	scopeAbstractUnixSocket = 1 << 0 // ABI 6
	scopeSignal             = 1 << 1

	prSetNoNewPrivs = 38
	oPath           = 0x200000
)
