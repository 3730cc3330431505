// Command vermax prints the highest of the semantic versions it is given.
//
//	vermax [-a] [-c RANGE] [VERSION...]
//
// Without arguments it reads versions from standard input, one a line; blank
// lines and lines starting with "#" are skipped. Invalid versions are reported
// on standard error and skipped. With -c only versions in RANGE count (see
// package constraint). With -a it prints every such version in increasing
// order instead of only the highest. It exits 1 when no version was found.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"example.org/verkit/constraint"
	"example.org/verkit/semver"
)

func main() {
	all := flag.Bool("a", false, "print all versions in increasing order")
	within := flag.String("c", "", "only versions in this `range`")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: vermax [-a] [-c RANGE] [VERSION...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var c *constraint.Constraint
	if *within != "" {
		var err error
		if c, err = constraint.Parse(*within); err != nil {
			fmt.Fprintln(os.Stderr, "vermax:", err)
			os.Exit(2)
		}
	}
	os.Exit(run(flag.Args(), os.Stdin, os.Stdout, os.Stderr, *all, c))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, all bool, c *constraint.Constraint) int {
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
	if c != nil {
		versions = c.Filter(versions)
	}
	if len(versions) == 0 {
		if c != nil {
			fmt.Fprintf(stderr, "vermax: no version in %q\n", c)
		} else {
			fmt.Fprintln(stderr, "vermax: no valid version")
		}
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
