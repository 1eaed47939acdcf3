// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// bench:index load: many logs per transaction without storage writes, so a block carries
/// mainnet-like log density at little gas.
contract BenchEmitter {
    event Transfer(address indexed from, address indexed to, uint256 value);
    event Note(uint256 indexed key, uint256 value);

    /// `count` ERC-20 Transfer logs between addresses derived from `seed`.
    function spray(uint256 seed, uint256 count) external {
        for (uint256 i = 0; i < count; i++) {
            emit Transfer(address(uint160(seed + i)), address(uint160(seed + i + 1)), i + 1);
        }
    }

    /// `count` logs that are not transfers.
    function notes(uint256 seed, uint256 count) external {
        for (uint256 i = 0; i < count; i++) {
            emit Note(seed + i, i);
        }
    }
}

/// Splits the value it receives among `to` (each share an internal value transfer).
contract BenchPayer {
    function pay(address[] calldata to) external payable {
        uint256 share = msg.value / to.length;
        for (uint256 i = 0; i < to.length; i++) {
            (bool ok, ) = payable(to[i]).call{value: share}("");
            require(ok, "pay failed");
        }
    }
}
