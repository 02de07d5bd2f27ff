// SPDX-License-Identifier: Apache-2.0
// Chunks one file, held in memory, with restic's Rabin chunker (Debian's
// golang-github-restic-chunker-dev) and prints one JSON line: the MB/s of
// the chunking loop alone (CPU time) and the chunk count; with -lengths, the
// chunk lengths instead, one a line (tests/compat-oracle). Written for bench/peers.
//   restic-chunker [-lengths] [-poly HEX] FILE MIN MAX AVERAGE_BITS
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/restic/chunker"
)

// cpuSeconds is the CPU time of the process (user + system): like cdc
// speed, the figure then does not depend on other load on a shared machine.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func main() {
	lengths := flag.Bool("lengths", false, "print the chunk lengths, one a line")
	// The polynomial restic's tests use by default; any irreducible one works.
	polyHex := flag.String("poly", "3DA3358B4DC173", "the polynomial, in hex")
	flag.Parse()
	args := flag.Args()
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: restic-chunker [-lengths] [-poly HEX] FILE MIN MAX AVERAGE_BITS")
		os.Exit(2)
	}
	poly, err := strconv.ParseUint(*polyHex, 16, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	min, _ := strconv.Atoi(args[1])
	max, _ := strconv.Atoi(args[2])
	bits, _ := strconv.Atoi(args[3])
	c := chunker.NewWithBoundaries(bytes.NewReader(data), chunker.Pol(poly), uint(min), uint(max))
	c.SetAverageBits(bits)
	buf := make([]byte, max)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	chunks := 0
	start := cpuSeconds()
	for {
		ch, err := c.Next(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		if *lengths {
			fmt.Fprintln(out, ch.Length)
		}
		chunks++
	}
	secs := cpuSeconds() - start
	if *lengths {
		return
	}
	fmt.Fprintf(out, "{\"peer\":\"restic-chunker\",\"mb_s\":%.1f,\"chunks\":%d}\n", float64(len(data))/1e6/secs, chunks)
}
