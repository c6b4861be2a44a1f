%% The registry on the BEAM, the shapes of
%% `benches/peers/src/bin/registry.rs`, to run side by side with it:
%%
%%   erlc -o /tmp benches/peers/erlang/registry.erl
%%   erl -noshell +S 2 -pa /tmp -s registry main -s init stop
%%
%% - triple: `register/2` + `whereis/1` + `unregister/1` of one atom for an
%%   idle process, 1,000,000 times (ns per triple);
%% - whereis: `whereis/1` of a registered atom, 10,000,000 times (ns each).
%%
%% Each printed 5 times (5 rounds); names are atoms, interned before the
%% loop, as the Rust side's names are built before its loop.
-module(registry).
-export([main/0, idle/0]).

now_ns() -> erlang:monotonic_time(nanosecond).

idle() -> receive stop -> ok end.

triples(_, 0) -> ok;
triples(Pid, N) ->
    true = register(bench_name, Pid),
    Pid = whereis(bench_name),
    true = unregister(bench_name),
    triples(Pid, N - 1).

lookups(_, 0) -> ok;
lookups(Pid, N) ->
    Pid = whereis(bench_name),
    lookups(Pid, N - 1).

one_round(Pid) ->
    N = 1000000,
    T0 = now_ns(),
    triples(Pid, N),
    T1 = now_ns(),
    true = register(bench_name, Pid),
    M = 10000000,
    T2 = now_ns(),
    lookups(Pid, M),
    T3 = now_ns(),
    true = unregister(bench_name),
    io:format("beam triple_ns ~.1f whereis_ns ~.2f~n", [(T1 - T0) / N, (T3 - T2) / M]).

main() ->
    Pid = spawn(fun idle/0),
    one_round(Pid), % warm-up
    [one_round(Pid) || _ <- lists:seq(1, 5)],
    Pid ! stop.
