%% Side-by-side with benches/peers/src/bin/call.rs: a caller and a callee,
%% sequential gen_server:call(Pid, Req, 1000) round trips; and
%% erlang:send_after(60000, ..) followed by erlang:cancel_timer.
%% Medians of 5 rounds, ns per operation.
%%
%%   erlc call.erl && erl -noshell +S 2 -s call main -s init stop
-module(call).
-behaviour(gen_server).
-export([main/0, init/1, handle_call/3, handle_cast/2]).

init([]) -> {ok, nil}.
handle_call({add, N}, _From, S) -> {reply, N + 1, S}.
handle_cast(_, S) -> {noreply, S}.

scale() ->
    case os:getenv("SCALE") of
        false -> 1.0;
        V -> try list_to_float(V) catch _:_ -> float(list_to_integer(V)) end
    end.

calls(_, 0) -> ok;
calls(Pid, N) -> N1 = gen_server:call(Pid, {add, N}, 1000), N1 = N + 1, calls(Pid, N - 1).

round_call(Calls) ->
    {ok, Pid} = gen_server:start(?MODULE, [], []),
    Self = self(),
    T0 = erlang:monotonic_time(nanosecond),
    Caller = spawn(fun() -> calls(Pid, Calls), Self ! {done, self()} end),
    receive {done, Caller} -> ok end,
    T1 = erlang:monotonic_time(nanosecond),
    gen_server:stop(Pid),
    (T1 - T0) / Calls.

pairs(_, 0) -> ok;
pairs(Pid, N) ->
    Ref = erlang:send_after(60000, Pid, N),
    true = is_integer(erlang:cancel_timer(Ref)),
    pairs(Pid, N - 1).

round_cancel(Pairs) ->
    Pid = spawn(fun() -> receive stop -> ok end end),
    T0 = erlang:monotonic_time(nanosecond),
    pairs(Pid, Pairs),
    T1 = erlang:monotonic_time(nanosecond),
    Pid ! stop,
    (T1 - T0) / Pairs.

median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

main() ->
    S = scale(),
    Calls = max(1, round(200000 * S)),
    Pairs = max(1, round(1000000 * S)),
    C = median([round_call(Calls) || _ <- lists:seq(1, 5)]),
    P = median([round_cancel(Pairs) || _ <- lists:seq(1, 5)]),
    io:format("call        otp gen_server:call/3 ~.1f ns/call~n", [C]),
    io:format("send_cancel otp send_after+cancel_timer ~.1f ns/pair~n", [P]).
