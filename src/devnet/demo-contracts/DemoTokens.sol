// SPDX-License-Identifier: MIT
// Sample tokens for `halyard dev --demo`, the data-API tests and bench/index.ts.
// Built on OpenZeppelin Contracts 5; minting is open to anyone because these live on a devnet.
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";

contract DemoERC20 is ERC20 {
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_) ERC20(name_, symbol_) {
        _decimals = decimals_;
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// Many transfers in one transaction (bench): mints `amount` to each of `count` derived addresses.
    function spray(uint256 seed, uint256 count, uint256 amount) external {
        for (uint256 i = 0; i < count; i++) {
            _mint(address(uint160(uint256(keccak256(abi.encode(seed, i))))), amount);
        }
    }
}

contract DemoERC721 is ERC721 {
    mapping(uint256 => string) private _uris;
    string private _contractURI;

    constructor(string memory name_, string memory symbol_) ERC721(name_, symbol_) {}

    function mint(address to, uint256 tokenId, string calldata uri) external {
        _mint(to, tokenId);
        _uris[tokenId] = uri;
    }

    /// Mints ids [firstId, firstId + count) to `to` (bench).
    function mintRange(address to, uint256 firstId, uint256 count) external {
        for (uint256 i = 0; i < count; i++) {
            _mint(to, firstId + i);
        }
    }

    function burn(uint256 tokenId) external {
        _burn(tokenId);
    }

    function setTokenURI(uint256 tokenId, string calldata uri) external {
        _uris[tokenId] = uri;
    }

    function setContractURI(string calldata uri) external {
        _contractURI = uri;
    }

    function contractURI() external view returns (string memory) {
        return _contractURI;
    }

    function tokenURI(uint256 tokenId) public view override returns (string memory) {
        _requireOwned(tokenId);
        return _uris[tokenId];
    }
}

contract DemoERC1155 is ERC1155 {
    string public name;
    string public symbol;

    constructor(string memory uri_, string memory name_, string memory symbol_) ERC1155(uri_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 id, uint256 amount) external {
        _mint(to, id, amount, "");
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        _mintBatch(to, ids, amounts, "");
    }

    function setURI(string calldata uri_) external {
        _setURI(uri_);
    }
}

/// An ERC-721 from before ERC-165 was common (CryptoPunks-era style): no supportsInterface, so
/// Halyard's standard detection has to fall back to the index and to probing ownerOf.
contract LegacyERC721 {
    string public name;
    string public symbol;
    uint256 public totalSupply;
    mapping(uint256 => address) private _owners;
    mapping(uint256 => string) private _uris;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 tokenId, string calldata uri) external {
        require(_owners[tokenId] == address(0), "minted");
        _owners[tokenId] = to;
        _uris[tokenId] = uri;
        totalSupply += 1;
        emit Transfer(address(0), to, tokenId);
    }

    function transferFrom(address from, address to, uint256 tokenId) external {
        require(_owners[tokenId] == from, "not owner");
        _owners[tokenId] = to;
        emit Transfer(from, to, tokenId);
    }

    function ownerOf(uint256 tokenId) external view returns (address) {
        address owner = _owners[tokenId];
        require(owner != address(0), "no such token");
        return owner;
    }

    function tokenURI(uint256 tokenId) external view returns (string memory) {
        require(_owners[tokenId] != address(0), "no such token");
        return _uris[tokenId];
    }
}

/// A token in the style of early ERC-20s (MKR, SAI) whose name and symbol are bytes32.
contract Bytes32Token {
    bytes32 public name;
    bytes32 public symbol;
    uint256 public decimals = 18;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 value);

    constructor(bytes32 name_, bytes32 symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        emit Transfer(msg.sender, to, amount);
        return true;
    }
}

/// A Chainlink-style USD price feed for the devnet (AggregatorV3Interface's read functions),
/// settable by anyone: the real feeds exist only on public chains.
contract DemoAggregator {
    uint8 public immutable decimals;
    int256 private _answer;
    uint256 private _updatedAt;
    uint80 private _round;

    constructor(uint8 decimals_) {
        decimals = decimals_;
    }

    function set(int256 answer, uint256 updatedAt) external {
        _answer = answer;
        _updatedAt = updatedAt;
        _round += 1;
    }

    function latestRoundData() external view returns (uint80, int256, uint256, uint256, uint80) {
        return (_round, _answer, _updatedAt, _updatedAt, _round);
    }
}
