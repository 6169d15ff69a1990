from atrex.cli import main

main()
