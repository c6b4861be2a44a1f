%% Monitors and links on the BEAM, the same three shapes as
%% `benches/peers/src/bin/links.rs` (issue 12), to run side by side with it:
%%
%%   erlc -o /tmp benches/peers/erlang/links.erl
%%   erl -noshell +S 2 -pa /tmp -s links main -s init stop
%%
%% - pair: one process does `erlang:monitor/2` + `erlang:demonitor/1` on an
%%   idle process, 1,000,000 times (ns per pair).
%% - down: a watcher spawns a process that stamps the clock into its exit
%%   reason and exits; the watcher monitors it and, on the 'DOWN', takes the
%%   time since the stamp (p50 and p99 over 20,000 samples, ns).
%% - chain: 1,000 processes, each linked to the previous one, torn down by
%%   the head exiting abnormally; from the head's exit to the last link's
%%   'DOWN' at a monitor, per process (median of 20 chains, ns).
%%
%% Two schedulers (+S 2), as the Rust side's two workers.
-module(links).
-export([main/0, idle/0, link/1]).

now_ns() -> erlang:monotonic_time(nanosecond).

idle() -> receive stop -> ok end.

pair(N) ->
    Target = spawn(fun idle/0),
    T0 = now_ns(),
    pairs(Target, N),
    T1 = now_ns(),
    Target ! stop,
    (T1 - T0) / N.

pairs(_, 0) -> ok;
pairs(Target, N) ->
    Ref = erlang:monitor(process, Target),
    true = erlang:demonitor(Ref),
    pairs(Target, N - 1).

down(Samples) ->
    Lat = [down_one() || _ <- lists:seq(1, Samples)],
    Sorted = lists:sort(Lat),
    {percentile(Sorted, 0.5), percentile(Sorted, 0.99)}.

down_one() ->
    {Pid, Ref} = spawn_monitor(fun() -> exit({stamp, now_ns()}) end),
    receive
        {'DOWN', Ref, process, Pid, {stamp, T}} -> now_ns() - T
    end.

percentile(Sorted, P) ->
    lists:nth(1 + trunc((length(Sorted) - 1) * P), Sorted).

link(Prev) ->
    case Prev of
        {none, _} -> ok;
        {P, _} -> erlang:link(P)
    end,
    {_, Parent} = Prev,
    Parent ! {linked, self()},
    receive fail -> exit(failed) end.

chain(Len) ->
    Self = self(),
    Spawn = fun(Prev) ->
        P = spawn(?MODULE, link, [{Prev, Self}]),
        receive {linked, P} -> P end
    end,
    Head = Spawn(none),
    Last = lists:foldl(fun(_, Prev) -> Spawn(Prev) end, Head, lists:seq(2, Len)),
    Ref = erlang:monitor(process, Last),
    T0 = now_ns(),
    Head ! fail,
    receive {'DOWN', Ref, process, Last, _} -> ok end,
    T1 = now_ns(),
    (T1 - T0) / Len.

main() ->
    Pair = pair(1000000),
    {P50, P99} = down(20000),
    Chains = lists:sort([chain(1000) || _ <- lists:seq(1, 20)]),
    Chain = lists:nth(10, Chains),
    io:format("pair (monitor+demonitor), ns: BEAM ~.1f~n", [Pair]),
    io:format("down latency p50/p99, ns: BEAM ~p/~p~n", [P50, P99]),
    io:format("chain of 1000 torn down from its head, median ns per process: BEAM ~.1f~n", [Chain]).
