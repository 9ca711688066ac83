from gateway.cli._app import main

main()
