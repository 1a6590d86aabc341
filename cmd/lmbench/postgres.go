package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"lmtool.dev/lm/pkg/agentload"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/store"
)

// postgresBench measures the queue on PostgreSQL, in a private cluster:
// claim throughput against a bare SKIP LOCKED loop on the same database,
// the wake-up latency between two LM_HOMEs (two machines' gateways or
// CLIs) sharing it, and many agents over one and three gateways. Without PostgreSQL it prints why it measured nothing.
func postgresBench(lm string) error {
	fmt.Println("## The queue on PostgreSQL")
	fmt.Println()
	cluster, err := pgtest.Start()
	if err != nil {
		fmt.Printf("Skipped: %v.\n", err)
		return nil
	}
	defer cluster.Stop()
	if err := claimThroughput(cluster); err != nil {
		return err
	}
	if os.Getenv("LMBENCH_PG_ONLY") == "claims" {
		return nil
	}
	fmt.Println()
	if err := remoteWakeup(cluster, lm); err != nil {
		return err
	}
	fmt.Println()
	return agentsOnDatabase(cluster, lm)
}

// agentsOnDatabase is the many-agents benchmark (see agentsBench) with 50
// agents on one gateway whose queue is in the database, and on three
// gateways (each on a LM_HOME of its own, as on three machines) sharing it.
func agentsOnDatabase(cluster *pgtest.Cluster, lm string) error {
	const agents = 50
	fmt.Printf("%d agents whose queue is in the database, as in the many-agents benchmark (%d instructions, each delivered exactly once), "+
		"the agents and the HTTP adds spread over the gateways:\n\n", agents, agentsInstructions)
	fmt.Println("| gateways | agents | deliveries/s | add → delivery p50 | p99 | max |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, gateways := range []int{1, 3} {
		res, err := agentsOnGateways(cluster, lm, gateways, agents)
		if err != nil {
			return fmt.Errorf("%d agents on %d gateways on the database: %w", agents, gateways, err)
		}
		fmt.Printf("| %d | %d | %.0f | %s | %s | %s |\n", gateways, agents, float64(res.Delivered)/res.Elapsed.Seconds(),
			ms(percentile(res.Latency, .5)), ms(percentile(res.Latency, .99)), ms(percentile(res.Latency, 1)))
	}
	return nil
}

// agentsOnGateways runs the many-agents load over n gateways on a fresh
// database.
func agentsOnGateways(cluster *pgtest.Cluster, lm string, n, agents int) (agentload.Result, error) {
	url, err := cluster.Database()
	if err != nil {
		return agentload.Result{}, err
	}
	dir, cleanup := home()
	defer cleanup()
	for _, args := range [][]string{{"store", "migrate"}, {"queue", "config", "default_wait_seconds=30"}} {
		if out, err := command(dir, lm, append([]string{"--store", url}, args...)...).CombinedOutput(); err != nil {
			return agentload.Result{}, fmt.Errorf("lm %v: %v: %s", args, err, out)
		}
	}
	var bases []string
	for range n {
		gwHome, done := home()
		defer done()
		gw, err := startServer(command(gwHome, lm, "--store", url, "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", gwHome+"/gw.addr"), gwHome+"/gw.addr")
		if err != nil {
			return agentload.Result{}, err
		}
		defer gw.stop()
		bases = append(bases, gw.base)
	}
	return agentload.Run(context.Background(), agentload.Config{
		URL: bases[0], More: bases[1:], Agents: agents,
		HTTPAdds: agentsInstructions / 2, HTTPProducers: 8, CLIAdds: agentsInstructions - agentsInstructions/2, CLIBatch: 100,
		LM: lm, Env: append(os.Environ(), "LM_HOME="+dir, "LM_STORE="+url), Timeout: 10 * time.Minute,
	})
}

const benchClaimers = 8

// benchClaims and wakeupTrials can be lowered on a busy machine;
// LMBENCH_PG_ONLY=claims runs the claim race alone, to repeat it.
var (
	benchClaims  = envInt("LMBENCH_PG_CLAIMS", 2000)
	wakeupTrials = envInt("LMBENCH_PG_WAKEUPS", 100)
)

// claimThroughput races benchClaimers get_user_request loops (in one
// process, each its own agent) over benchClaims instructions, against the
// same number of bare loops that claim a row with SKIP LOCKED and mark it
// consumed.
func claimThroughput(cluster *pgtest.Cluster) error {
	ctx := context.Background()
	url, err := cluster.Database()
	if err != nil {
		return err
	}
	if _, err := pgstore.Migrate(ctx, url); err != nil {
		return err
	}
	dir, done := home()
	defer done()
	env := &op.Env{Store: store.New(filepath.Join(dir, "lm.db"), 0), Queue: url, Stderr: io.Discard, Now: time.Now}
	zero := 0
	if _, err := queue.Config(ctx, env, queue.ConfigInput{DefaultWaitSeconds: &zero}); err != nil {
		return err
	}
	contents := make([]string, benchClaims)
	for i := range contents {
		contents[i] = fmt.Sprintf("claim %d", i)
	}
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: contents}); err != nil {
		return err
	}
	lmTime, err := claimAll(func(agent int) (bool, error) {
		out, err := queue.Next(ctx, env, queue.NextInput{AgentID: fmt.Sprintf("bench-%d", agent)})
		return out.Instruction != nil, err
	})
	if err != nil {
		return err
	}

	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, sql := range []string{
		"CREATE TABLE bare (id bigserial PRIMARY KEY, ord bigint NOT NULL, status text NOT NULL, consumed_by text)",
		"CREATE INDEX bare_pending ON bare (ord) WHERE status = 'pending'",
		fmt.Sprintf("INSERT INTO bare (ord, status) SELECT n, 'pending' FROM generate_series(1, %d) n", benchClaims),
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return err
		}
	}
	bareTime, err := claimAll(func(agent int) (bool, error) {
		claimed := false
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var id int64
			err := tx.QueryRow(ctx, "SELECT id FROM bare WHERE status = 'pending' ORDER BY ord LIMIT 1 FOR UPDATE SKIP LOCKED").Scan(&id)
			if err == pgx.ErrNoRows {
				return nil
			}
			if err != nil {
				return err
			}
			claimed = true
			_, err = tx.Exec(ctx, "UPDATE bare SET status = 'consumed', consumed_by = $2 WHERE id = $1", id, fmt.Sprint(agent))
			return err
		})
		return claimed, err
	})
	if err != nil {
		return err
	}
	lmRate, bareRate := float64(benchClaims)/lmTime.Seconds(), float64(benchClaims)/bareTime.Seconds()
	fmt.Printf("Claims of %d instructions by %d concurrent claimers on one database: `get_user_request` (claim, agent activity, events, NOTIFY, acknowledgement) against a bare `SELECT … FOR UPDATE SKIP LOCKED` + `UPDATE` loop in Go:\n\n", benchClaims, benchClaimers)
	fmt.Println("| lm claims/s | bare loop claims/s | ratio | target |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %.0f | %.0f | %.2f× | ≥ 0.7× |\n", lmRate, bareRate, lmRate/bareRate)
	return nil
}

// claimAll runs benchClaimers loops of claim until every instruction is
// taken and returns how long that took; a count other than benchClaims is
// an error.
func claimAll(claim func(agent int) (bool, error)) (time.Duration, error) {
	var (
		taken atomic.Int64
		wg    sync.WaitGroup
		first error
		once  sync.Once
	)
	start := time.Now()
	for agent := range benchClaimers {
		wg.Go(func() {
			for {
				ok, err := claim(agent)
				if err != nil {
					once.Do(func() { first = err })
					return
				}
				if !ok {
					return
				}
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return 0, first
	}
	if n := taken.Load(); n != int64(benchClaims) {
		return 0, fmt.Errorf("%d claims of %d instructions", n, benchClaims)
	}
	return elapsed, nil
}

// remoteWakeup times an add on one LM_HOME reaching a `lm queue next`
// already waiting on another, both on the database.
func remoteWakeup(cluster *pgtest.Cluster, lm string) error {
	url, err := cluster.Database()
	if err != nil {
		return err
	}
	adder, doneA := home()
	defer doneA()
	waiter, doneW := home()
	defer doneW()
	at := func(args ...string) []string { return append([]string{"--store", url}, args...) }
	if out, err := command(adder, lm, at("store", "migrate")...).CombinedOutput(); err != nil {
		return fmt.Errorf("lm store migrate: %v: %s", err, out)
	}
	if err := command(adder, lm, at("queue", "config", "default_wait_seconds=30")...).Run(); err != nil {
		return err
	}
	n := wakeupTrials
	var lat []time.Duration
	for i := range n {
		d, err := wakeTrial(
			command(waiter, lm, at("queue", "next", "--agent-id", "b")...),
			func() error { return waitWaiting(adder, lm, "--store", url) },
			command(adder, lm, at("queue", "add", fmt.Sprintf("wake %d", i))...))
		if err != nil {
			return fmt.Errorf("trial %d: %w", i, err)
		}
		lat = append(lat, d)
	}
	fmt.Printf("An instruction added on one LM_HOME reaches a `lm queue next` already waiting on another, through the database's NOTIFY (%d trials; from the add's transaction to the claim's):\n\n", n)
	fmt.Println("| p50 | p99 | max | target p99 |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %s | %s | %s | ≤ 50 ms |\n", ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), ms(percentile(lat, 1)))
	return nil
}
