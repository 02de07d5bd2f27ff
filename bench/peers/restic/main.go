// Chunks one file, held in memory, with restic's Rabin chunker (Debian's
// golang-github-restic-chunker-dev) and prints one JSON line: the MB/s of
// the chunking loop alone (CPU time) and the chunk count. Written for bench/peers.
//   restic-chunker FILE MIN MAX AVERAGE_BITS
package main

import (
	"bytes"
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
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: restic-chunker FILE MIN MAX AVERAGE_BITS")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	min, _ := strconv.Atoi(os.Args[2])
	max, _ := strconv.Atoi(os.Args[3])
	bits, _ := strconv.Atoi(os.Args[4])
	// The polynomial restic's tests use; any irreducible one works.
	const pol = chunker.Pol(0x3DA3358B4DC173)
	c := chunker.NewWithBoundaries(bytes.NewReader(data), pol, uint(min), uint(max))
	c.SetAverageBits(bits)
	buf := make([]byte, max)
	chunks := 0
	start := cpuSeconds()
	for {
		_, err := c.Next(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		chunks++
	}
	secs := cpuSeconds() - start
	fmt.Printf("{\"peer\":\"restic-chunker\",\"mb_s\":%.1f,\"chunks\":%d}\n", float64(len(data))/1e6/secs, chunks)
}
