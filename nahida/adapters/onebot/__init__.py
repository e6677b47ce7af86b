"""QQ through OneBot v11 (NapCat, LLOneBot, Lagrange, go-cqhttp): reverse WebSocket, forward
WebSocket, and HTTP POST events with the HTTP API. `adapter.build` is what `nahida.app` calls."""
