// Command workqueue_go times controller-runtime's priority queue on bench/workqueue.py's
// "prefilled, 1 worker" scenario: add every key, then one worker gets and marks each done.
//
// The queue runs with controller-runtime's default metrics provider (Prometheus, as a manager
// has it). It prints one line of JSON: microseconds per add+get+done for each run.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// run times items keys through a fresh queue; each run gets its own name, as the metrics
// are labelled by it.
func run(name string, items int) time.Duration {
	start := time.Now()
	queue := priorityqueue.New[int](name)
	for item := range items {
		queue.Add(item)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range items {
			item, shutdown := queue.Get()
			if shutdown {
				fmt.Fprintln(os.Stderr, "queue shut down early")
				os.Exit(1)
			}
			queue.Done(item)
		}
	}()
	<-finished
	queue.ShutDown()
	return time.Since(start)
}

func main() {
	items := flag.Int("items", 200_000, "keys per run")
	runs := flag.Int("runs", 3, "runs")
	flag.Parse()
	perKey := make([]float64, 0, *runs)
	for i := range *runs {
		elapsed := run(fmt.Sprintf("bench-%d", i), *items)
		perKey = append(perKey, float64(elapsed.Nanoseconds())/1e3/float64(*items))
	}
	out, _ := json.Marshal(map[string]any{"items": *items, "us_per_key": perKey})
	fmt.Println(string(out))
}
