package upstream

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/internal/proc"
)

// tailLines is how many of an upstream's last stderr lines an exit records.
const tailLines = 10

// process is a stdio upstream's child: its pipes, its stderr (logged,
// redacted, the last lines kept) and its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	done   chan struct{} // closed when the process has exited
	err    error         // from Wait, valid after done
	// requested is whether the bridge had asked the process to stop when
	// it exited (else it crashed or quit on its own); valid after done.
	requested bool

	mu       sync.Mutex
	lines    []string
	stopFlag atomic.Bool
	// confined is whether it runs under Landlock.
	confined bool
	// tag is the TRACEBRIDGE_UPSTREAM=… entry of its environment, which
	// its descendants inherit: how stop finds those that left its group.
	tag string
}

// startProcess starts cfg's command (resolved to exe) with env, confined
// by spec unless it is nil. Its stderr goes to log, line by line,
// redacted; never to the bridge's stdout.
func startProcess(cfg config.Server, exe string, env []string, spec *confine.Spec, log *slog.Logger, red *events.Redactor) (*process, error) {
	cmd := exec.Command(exe, cfg.Args...)
	cmd.Args[0] = cfg.Command
	cmd.Dir = cfg.Cwd
	tag := fmt.Sprintf("TRACEBRIDGE_UPSTREAM=%d-%s", os.Getpid(), hex.EncodeToString(randomTag()))
	cmd.Env = append(env, tag)
	if spec != nil {
		spec.Exec = exe
		if err := confine.Wrap(cmd, *spec); err != nil {
			return nil, err
		}
	}
	proc.OwnGroup(cmd)
	p := &process{cmd: cmd, done: make(chan struct{}), tag: tag}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// Our own pipe, not StdoutPipe: Wait closes StdoutPipe's read end when
	// the process exits, and a read racing it would see "file already
	// closed" instead of the EOF that says the upstream exited.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	p.stdout = pr
	// stderr on a pipe of our own too: a descendant that inherited it (a
	// forked child) can hold it open after the upstream exited, and the
	// exit must not wait for that descendant.
	er, ew, err := os.Pipe()
	if err != nil {
		pr.Close()
		return nil, err
	}
	cmd.Stderr = ew
	err = cmd.Start()
	pw.Close() // the child holds its own copies
	ew.Close()
	if err != nil {
		pr.Close()
		er.Close()
		return nil, err
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		p.readStderr(er, log, red)
	}()
	go func() {
		werr := cmd.Wait()
		// The last lines an exit records are read before done says it
		// exited, unless a descendant keeps the pipe open: then what it
		// writes later is not the upstream's, and reading stops.
		select {
		case <-stderrDone:
		case <-time.After(stderrGrace):
			er.Close()
			<-stderrDone
		}
		p.err = werr
		p.requested = p.stopFlag.Load()
		close(p.done)
	}()
	return p, nil
}

// stderrGrace is how long an upstream's exit waits for the end of its
// stderr, which a descendant that inherited the pipe may hold open.
const stderrGrace = time.Second

func (p *process) pid() int { return p.cmd.Process.Pid }

func randomTag() []byte {
	b := make([]byte, 8)
	rand.Read(b)
	return b
}

// What of an upstream's stderr reaches the bridge's log: lines cut at
// maxStderrLine bytes (the rest counted), at most stderrBudget lines a
// minute (the rest counted and said once the minute is over). The pipe is
// read to its end whatever comes through it, so the upstream never blocks
// on a full stderr.
const (
	maxStderrLine = 4 << 10
	stderrBudget  = 600
)

func (p *process) readStderr(r io.Reader, log *slog.Logger, red *events.Redactor) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	b := budget{n: stderrBudget, window: time.Minute}
	overBudget := func(n int) {
		if n > 0 {
			log.Warn("upstream stderr lines not logged (over the budget)", "lines", n, "budget", stderrBudget, "per", "minute")
		}
	}
	for {
		line, cut, err := readLine(br, maxStderrLine)
		if len(line) > 0 || cut > 0 || err == nil {
			text := red.Value("stderr", string(line))
			if cut > 0 {
				text += fmt.Sprintf(" …[line cut: %d more bytes]", cut)
			}
			ok, dropped := b.take(time.Now())
			overBudget(dropped)
			switch {
			case ok && p.stopFlag.Load():
				// What a server says as the bridge stops it (an EPIPE
				// stack trace at every session's end) is its exit's
				// tail, not news: debug.
				log.Debug("upstream stderr", "line", text, "stopping", true)
			case ok:
				log.Info("upstream stderr", "line", text)
			}
			p.mu.Lock()
			p.lines = append(p.lines, oneLine(text, 300))
			if len(p.lines) > tailLines {
				p.lines = p.lines[len(p.lines)-tailLines:]
			}
			p.mu.Unlock()
		}
		if err != nil {
			overBudget(b.drain())
			return
		}
	}
}

// readLine reads one line (without its newline) of at most max bytes from
// br, discarding and counting the rest of a longer one.
func readLine(br *bufio.Reader, max int) (line []byte, cut int, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if room := max - len(line); room > 0 {
			line = append(line, frag[:min(len(frag), room)]...)
			cut += len(frag) - min(len(frag), room)
		} else {
			cut += len(frag)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		} else if cut > 0 && len(frag) > 0 && frag[len(frag)-1] == '\n' {
			cut--
		}
		return line, cut, err
	}
}

// tail is the last stderr lines, joined with " | ".
func (p *process) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, " | ")
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) {
	select {
	case <-p.done:
	case <-time.After(d):
	}
}

func (p *process) exitCode() int {
	if !p.exited() {
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// exitText says how the process ended ("" while it runs): its exit code or
// signal and its last stderr lines.
func (p *process) exitText() string {
	if !p.exited() {
		return ""
	}
	how := fmt.Sprintf("exited with code %d", p.exitCode())
	var ee *exec.ExitError
	if errors.As(p.err, &ee) && ee.ExitCode() < 0 {
		how = "was killed (" + ee.String() + ")"
	}
	if t := p.tail(); t != "" {
		how += "; its last stderr lines: " + t
	}
	return how
}

func (p *process) markStopping() { p.stopFlag.Store(true) }

// stop closes stdin (a well-behaved server exits), then kills the process
// if it has not exited within 2s; either way what is left of its process
// group (children it started) is killed.
func (p *process) stop() {
	p.markStopping()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	proc.KillGroup(p.pid())
	killTagged(p.tag)
}
