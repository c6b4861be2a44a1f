%% The BEAM's row of nats/examples/nats_bench.rs: Erlang/OTP distribution
%% between two nodes on one machine, the same two figures as stepsched's
%% cross-node ones.
%%
%% - round trip: the driver on node A sends {ping, self(), N} to the
%%   process registered as pong on node B and waits for {pong, N}, TRIPS
%%   times in sequence; ns per trip;
%% - throughput: the driver asks pong for a count of MESSAGES with
%%   {count, self(), MESSAGES}, sends MESSAGES {num, I} and waits for
%%   {counted, MESSAGES}; messages per second.
%%
%% The driver resolves {pong, NodeB} to its pid once, so the timed sends
%% go to a pid, as stepsched's go to a Pid. ROUNDS + 1 rounds, the first a
%% warm-up. Env: PONG_NODE (name@host, or a bare name on this host),
%% ROUNDS (5), TRIPS (2000), MESSAGES (100000). Printed, one line each:
%%
%%   beam connect_ms <ms until pong answered>
%%   beam round_trip_ns <median> rounds <r1> <r2> ...
%%   beam msgs_per_sec <median> rounds <r1> <r2> ...
%%
%% By hand (nats_bench does this itself when erl and erlc are on PATH):
%%
%%   erlc dist.erl
%%   erl -sname pong -setcookie bench -noshell +S 2 -s dist pong &
%%   PONG_NODE=pong erl -sname ping -setcookie bench -noshell +S 2 -s dist main -s init stop
%%   kill %1
%%
%% `-s dist pong stdin` also halts node B when its standard input closes,
%% so a launcher that dies leaves no node behind.
-module(dist).
-export([pong/0, pong/1, main/0]).

pong() ->
    register(pong, spawn(fun() -> serve(0, none) end)),
    ok.

pong([stdin]) ->
    ok = pong(),
    spawn(fun() -> watch_stdin() end),
    ok.

watch_stdin() ->
    case io:get_line("") of
        eof -> erlang:halt(0);
        {error, _} -> erlang:halt(0);
        _ -> watch_stdin()
    end.

%% Count: nums received and not yet reported; Want: a pending
%% {From, K} count request, answered once Count reaches K.
serve(Count, Want) ->
    receive
        {ping, From, N} ->
            From ! {pong, N},
            serve(Count, Want);
        {num, _} ->
            counted(Count + 1, Want);
        {count, From, K} ->
            counted(Count, {From, K});
        _ ->
            serve(Count, Want)
    end.

counted(Count, {From, K}) when Count >= K ->
    From ! {counted, K},
    serve(Count - K, none);
counted(Count, Want) ->
    serve(Count, Want).

env(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        V -> list_to_integer(V)
    end.

now_ns() -> erlang:monotonic_time(nanosecond).

%% PONG_NODE with no host part names a node on this node's host.
pong_node() ->
    case os:getenv("PONG_NODE") of
        false ->
            exit(no_pong_node);
        Name ->
            case lists:member($@, Name) of
                true ->
                    list_to_atom(Name);
                false ->
                    [_, Host] = string:split(atom_to_list(node()), "@"),
                    list_to_atom(Name ++ "@" ++ Host)
            end
    end.

%% Node B is reachable once net_adm:ping answers and pong is registered
%% there (its -s dist pong may run after its distribution is up).
reach(Node, Deadline) ->
    Found =
        case net_adm:ping(Node) of
            pong -> rpc:call(Node, erlang, whereis, [pong]);
            pang -> undefined
        end,
    case Found of
        Pid when is_pid(Pid) ->
            Pid;
        _ ->
            case now_ns() > Deadline of
                true ->
                    exit({unreachable, Node});
                false ->
                    timer:sleep(100),
                    reach(Node, Deadline)
            end
    end.

pings(_, N, Trips) when N > Trips -> ok;
pings(Pong, N, Trips) ->
    Pong ! {ping, self(), N},
    receive
        {pong, N} -> pings(Pong, N + 1, Trips)
    after 10000 -> exit({no_pong, N})
    end.

round_trip(Pong, Trips) ->
    T0 = now_ns(),
    ok = pings(Pong, 1, Trips),
    (now_ns() - T0) / Trips.

nums(_, 0) -> ok;
nums(Pong, I) ->
    Pong ! {num, I},
    nums(Pong, I - 1).

throughput(Pong, Messages) ->
    Pong ! {count, self(), Messages},
    T0 = now_ns(),
    ok = nums(Pong, Messages),
    receive
        {counted, Messages} -> ok
    after 120000 -> exit(no_count)
    end,
    Messages * 1.0e9 / (now_ns() - T0).

median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

%% Each figure in Fmt: "~.1f" takes a float, "~b" an integer.
line(Name, Rounds, Fmt) ->
    Each = [io_lib:format(Fmt, [R]) || R <- Rounds],
    io:format("beam ~s " ++ Fmt ++ " rounds ~s~n", [Name, median(Rounds), lists:join(" ", Each)]).

main() ->
    try
        run()
    catch
        Class:Reason ->
            io:format("beam error ~p:~p~n", [Class, Reason]),
            erlang:halt(1)
    end.

run() ->
    Rounds = max(1, env("ROUNDS", 5)),
    Trips = max(1, env("TRIPS", 2000)),
    Messages = max(1, env("MESSAGES", 100000)),
    Node = pong_node(),
    T0 = now_ns(),
    Pong = reach(Node, T0 + 15000000000),
    io:format("beam connect_ms ~.1f~n", [(now_ns() - T0) / 1.0e6]),
    Results = [{round_trip(Pong, Trips), throughput(Pong, Messages)} || _ <- lists:seq(0, Rounds)],
    [_Warmup | Timed] = Results,
    line("round_trip_ns", [R || {R, _} <- Timed], "~.1f"),
    line("msgs_per_sec", [round(T) || {_, T} <- Timed], "~b").
