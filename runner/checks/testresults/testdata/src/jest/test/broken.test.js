this is ( not js
