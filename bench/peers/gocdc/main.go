// SPDX-License-Identifier: Apache-2.0
// Chunks one file, held in memory, with go-cdc-chunkers (the Go library whose
// cut points cdc reproduces) through its public API (NewChunker over a
// bytes.Reader, Next until io.EOF), and prints one JSON line per algorithm:
// the MB/s of the chunking loop alone (CPU time of the process, best of
// -runs) and the chunk count. Each algorithm runs at the library's default
// profile (2 KiB / 8 KiB / 64 KiB), as `cdc speed` does. The file is read
// into memory mapped with transparent huge pages asked for (-pages huge,
// the default) or refused (-pages small), as `cdc speed --pages` maps its
// buffer, so that both read their input from the same kind of pages.
// Written for bench/peers/gocdc.sh.
//   gocdc-bench [-runs N] [-key HEX] [-pages huge|small] FILE ALGORITHM...
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc4stadia"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/jc"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/ultracdc"
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

func chunkAll(algorithm string, data []byte, key []byte) (int, error) {
	var opts *chunkers.ChunkerOpts
	if key != nil {
		opts = &chunkers.ChunkerOpts{Key: key}
	}
	c, err := chunkers.NewChunker(algorithm, bytes.NewReader(data), opts)
	if err != nil {
		return 0, err
	}
	chunks := 0
	for {
		chunk, err := c.Next()
		if len(chunk) != 0 {
			chunks++
		}
		if err == io.EOF {
			return chunks, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// readMapped reads the file into anonymous memory of its own mapping,
// advised to huge pages or against them.
func readMapped(path string, huge bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int(st.Size())
	if size == 0 {
		return []byte{}, nil
	}
	const hugePage = 2 << 20
	// one huge page more, to start on a huge-page boundary
	raw, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	off := 0
	if a := uintptr(unsafe.Pointer(&raw[0])) % hugePage; a != 0 {
		off = int(hugePage - a)
	}
	data := raw[off : off+size]
	advice := syscall.MADV_NOHUGEPAGE
	if huge {
		advice = syscall.MADV_HUGEPAGE
	}
	if err := syscall.Madvise(data, advice); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}

func main() {
	runs := flag.Int("runs", 3, "measure each algorithm this many times and report the best")
	keyHex := flag.String("key", "", "32-byte key as 64 hex digits (kfastcdc needs one)")
	pages := flag.String("pages", "huge", "pages of the in-memory copy: huge or small")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: gocdc-bench [-runs N] [-key HEX] [-pages huge|small] FILE ALGORITHM...")
		os.Exit(2)
	}
	var key []byte
	if *keyHex != "" {
		var err error
		if key, err = hex.DecodeString(*keyHex); err != nil || len(key) != 32 {
			fmt.Fprintln(os.Stderr, "gocdc-bench: -key must be 64 hex digits")
			os.Exit(2)
		}
	}
	if *pages != "huge" && *pages != "small" {
		fmt.Fprintln(os.Stderr, "gocdc-bench: -pages must be huge or small")
		os.Exit(2)
	}
	data, err := readMapped(args[0], *pages == "huge")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	out := json.NewEncoder(os.Stdout)
	for _, algorithm := range args[1:] {
		var k []byte
		if algorithm == "kfastcdc" {
			k = key
		}
		best := 0.0
		chunks := 0
		for r := 0; r < *runs; r++ {
			start := cpuSeconds()
			n, err := chunkAll(algorithm, data, k)
			elapsed := cpuSeconds() - start
			if err != nil {
				fmt.Fprintf(os.Stderr, "gocdc-bench: %s: %v\n", algorithm, err)
				os.Exit(1)
			}
			chunks = n
			if mbs := float64(len(data)) / 1e6 / elapsed; mbs > best {
				best = mbs
			}
		}
		out.Encode(map[string]interface{}{"algorithm": algorithm, "mb_s": best, "chunks": chunks})
	}
}
