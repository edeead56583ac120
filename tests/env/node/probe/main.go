// probe: a small static tool in the real node's pause image
// (localhost/pause:testenv, as /probe) for tests that need a command inside
// a pod without any other image.
//
//	probe dns NAME...        resolves each NAME via the pod's /etc/resolv.conf;
//	                         prints "NAME ADDR..." per name
//	probe get URL            HTTP GET; prints the body; fails unless status 200
//	                         (a failed connection or another status is retried
//	                         for 30 s: a new Service's rules may still be on
//	                         their way, and until kube-proxy writes them the
//	                         address goes out by the host's default route, where
//	                         whatever answers it is not the Service)
//	probe serve ADDR TEXT    HTTP server on ADDR answering TEXT to every request
//	probe echo WORD...       prints the words (a command that just succeeds)
//
// Exit status: 0 on success, 1 when a lookup or request fails, 2 on bad usage.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "dns":
		err = lookup(args)
	case "get":
		err = get(args)
	case "serve":
		err = serve(args)
	case "echo":
		fmt.Println(strings.Join(args, " "))
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: probe dns NAME... | get URL | serve ADDR TEXT | echo WORD...")
	os.Exit(2)
}

func lookup(names []string) error {
	if len(names) == 0 {
		usage()
	}
	r := &net.Resolver{PreferGo: true}
	for _, n := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := r.LookupHost(ctx, n)
		cancel()
		if err != nil {
			return err
		}
		fmt.Println(n, strings.Join(addrs, " "))
	}
	return nil
}

func get(args []string) error {
	if len(args) != 1 {
		usage()
	}
	c := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, status, err := fetch(c, args[0])
		if err == nil && status == http.StatusOK {
			fmt.Print(body)
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			fmt.Print(body)
			return fmt.Errorf("%s: status %d", args[0], status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fetch: one GET of url; the body, the HTTP status, or the error of the
// connection or of reading the body.
func fetch(c *http.Client, url string) (string, int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	return string(body), resp.StatusCode, nil
}

func serve(args []string) error {
	if len(args) != 2 {
		usage()
	}
	text := args[1] + "\n"
	return http.ListenAndServe(args[0], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, text)
	}))
}
