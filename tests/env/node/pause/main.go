// The sandbox ("pause") process of the real node's pods: holds the pod's
// namespaces, reaps orphaned children (it is PID 1 of the pod), exits 0 on
// SIGINT or SIGTERM.  No input, no output; built static by tests/env/build.sh
// (component pause) and packed as the image localhost/pause:testenv.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD, syscall.SIGINT, syscall.SIGTERM)
	for s := range sig {
		if s == syscall.SIGINT || s == syscall.SIGTERM {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var st syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
	}
}
