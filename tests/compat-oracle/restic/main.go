// Prints the chunk lengths restic's chunker (Debian's
// golang-github-restic-chunker-dev) gives for one file, one per line.
// Written for tests/compat-oracle.
//   restic-lengths FILE POLY_HEX MIN MAX AVERAGE_BITS
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/restic/chunker"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: restic-lengths FILE POLY_HEX MIN MAX AVERAGE_BITS")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	pol, _ := strconv.ParseUint(os.Args[2], 16, 64)
	min, _ := strconv.Atoi(os.Args[3])
	max, _ := strconv.Atoi(os.Args[4])
	bits, _ := strconv.Atoi(os.Args[5])
	c := chunker.NewWithBoundaries(f, chunker.Pol(pol), uint(min), uint(max))
	c.SetAverageBits(bits)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	buf := make([]byte, max)
	for {
		ch, err := c.Next(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		fmt.Fprintln(out, ch.Length)
	}
}
