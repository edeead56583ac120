// CoreDNS for the test environment's real node: the stock server with only
// the plugins tests/env/up.sh writes into its Corefile (bind, errors, health,
// ready, cache, kubernetes, forward, log).  Built by tests/env/build.sh
// (component coredns) against the release pinned in versions.env.
// Input: the usual coredns flags (-conf FILE); output and errors: coredns's.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugin chain order (upstream keeps it in plugin.cfg): a plugin runs
// only when named here, in this order, whatever the Corefile's order.
func init() {
	dnsserver.Directives = []string{
		"bind", "health", "ready", "errors", "log", "cache", "kubernetes", "forward",
	}
}

func main() { coremain.Run() }
