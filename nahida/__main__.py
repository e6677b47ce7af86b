from nahida.cli import main

main()
