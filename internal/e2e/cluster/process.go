package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one child (etcd or kube-apiserver) running in its own process
// group, its output appended to a log file. The zero value is not usable;
// it is not safe for concurrent use.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the child has been reaped
	err  error         // the child's exit status, valid after done is closed
}

// startProcess starts bin with args, appending its stdout and stderr to
// logPath. The child leads its own process group, and the kernel kills it
// if the thread that started it exits (Pdeathsig), so a crashed test run
// leaves no server behind.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the %s log: %w", name, err)
	}
	fmt.Fprintf(log, "==== %s: starting %s %q\n", time.Now().Format(time.RFC3339Nano), bin, args)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited returns a channel closed once the child has exited.
func (p *process) exited() <-chan struct{} { return p.done }

// stop signals the whole process group with sig, waits up to grace for the
// child to exit, then kills the group. It returns once the child has been
// reaped and its log closed; the goroutine that reaps it is gone by then.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	defer p.log.Close()
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-pgid, sig)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	// Whatever else joined the group goes too.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing the %s process group %d: %w", p.name, pgid, err)
	}
	fmt.Fprintf(p.log, "==== %s: stopped (%v)\n", time.Now().Format(time.RFC3339Nano), p.err)
	return nil
}
