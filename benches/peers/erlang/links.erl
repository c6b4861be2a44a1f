%% Monitors and links on the BEAM, the same three shapes as
%% `benches/peers/src/bin/links.rs`, to run side by side with it:
%%
%%   erlc -o /tmp benches/peers/erlang/links.erl
%%   erl -noshell +S 2 -pa /tmp -s links main -s init stop
%%
%% - pair: one process does `erlang:monitor/2` + `erlang:demonitor/1` on an
%%   idle process, 1,000,000 times (ns per pair).
%% - down: a watcher spawns a process that stamps the clock into its exit
%%   reason and exits; the watcher monitors it and, on the 'DOWN', takes the
%%   time since the stamp (p50, p99 and the mean of p10-p90 over 20,000
%%   samples, ns). Each window holds the cost of one clock read, printed
%%   beside them (the gap between two back-to-back reads), as the Rust and
%%   Go sides print their own.
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
    {percentile(Sorted, 0.5), percentile(Sorted, 0.99), middle_mean(Sorted)}.

%% The mean of the samples between the 10th and the 90th percentile, as the
%% Rust side's `middle_mean`.
middle_mean(Sorted) ->
    N = length(Sorted),
    Middle = lists:sublist(Sorted, N div 10 + 1, N - 2 * (N div 10)),
    lists:sum(Middle) / length(Middle).

%% What a window measured as two now_ns() reads holds beyond itself: the
%% gap between two back-to-back reads (mean of p10-p90 of 200,000 pairs).
clock_gap() ->
    Gaps = [begin A = now_ns(), now_ns() - A end || _ <- lists:seq(1, 200000)],
    middle_mean(lists:sort(Gaps)).

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
    {P50, P99, Mean} = down(20000),
    Chains = lists:sort([chain(1000) || _ <- lists:seq(1, 20)]),
    Chain = lists:nth(10, Chains),
    io:format("pair (monitor+demonitor), ns: BEAM ~.1f~n", [Pair]),
    io:format("down latency p50/p99 (mean p10-p90), ns: BEAM ~p/~p (~.1f)~n", [P50, P99, Mean]),
    io:format("  each window holds one clock read: two back-to-back reads differ by ~.1f ns~n", [clock_gap()]),
    io:format("chain of 1000 torn down from its head, median ns per process: BEAM ~.1f~n", [Chain]).
