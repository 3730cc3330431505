// Command vermax prints the highest of the semantic versions it is given.
//
//	vermax [-a] [VERSION...]
//
// Without arguments it reads versions from standard input, one a line; blank
// lines and lines starting with "#" are skipped. Invalid versions are reported
// on standard error and skipped. With -a it prints every valid version in
// increasing order instead of only the highest. It exits 1 when no valid
// version was given.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"example.org/verkit/semver"
)

func main() {
	all := flag.Bool("a", false, "print all versions in increasing order")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: vermax [-a] [VERSION...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(flag.Args(), os.Stdin, os.Stdout, os.Stderr, *all))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, all bool) int {
	inputs := args
	if len(inputs) == 0 {
		scanner := bufio.NewScanner(stdin)
		for scanner.Scan() {
			line := strings.TrimSpace(scanner.Text())
			if line != "" && !strings.HasPrefix(line, "#") {
				inputs = append(inputs, line)
			}
		}
		if err := scanner.Err(); err != nil {
			fmt.Fprintln(stderr, "vermax:", err)
			return 2
		}
	}
	var versions []semver.Version
	for _, in := range inputs {
		v, err := semver.Parse(in)
		if err != nil {
			fmt.Fprintln(stderr, "vermax: skipping", err)
			continue
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		fmt.Fprintln(stderr, "vermax: no valid version")
		return 1
	}
	if all {
		semver.Sort(versions)
		for _, v := range versions {
			fmt.Fprintln(stdout, v)
		}
		return 0
	}
	best, _ := semver.Max(versions...)
	fmt.Fprintln(stdout, best)
	return 0
}
